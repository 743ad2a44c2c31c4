#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "backend/build_info.hpp"
#include "backend/communicator.hpp"
#include "common/errors.hpp"

namespace ragged::backend {
namespace {

TEST(LocalCommunicator, IsOneRank) {
  auto comm = make_local_communicator();
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);
  EXPECT_EQ(comm->name(), "local");
  comm->barrier();
  EXPECT_EQ(comm->sum(2.5), 2.5);
}

TEST(LocalCommunicator, CollectivesLeaveTheSingleSlot) {
  auto comm = make_local_communicator();
  const std::vector<float> original = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f};
  std::vector<float> buffer = original;
  comm->all_gather_in_place(buffer.data(), 5);
  EXPECT_EQ(buffer, original);
  comm->reduce_scatter_in_place(buffer.data(), 5);
  EXPECT_EQ(buffer, original);
  comm->all_reduce_in_place(buffer.data(), 5);
  EXPECT_EQ(buffer, original);
  comm->all_gather_in_place(nullptr, 0);  // empty slots need no buffer
  EXPECT_THROW(comm->all_reduce_in_place(buffer.data(), -1), InternalError);
}

TEST(LocalCommunicator, HasNoPeerToSendTo) {
  auto comm = make_local_communicator();
  std::vector<float> data(4, 1.0f);
  EXPECT_THROW(comm->send(data.data(), 4, 1, 0), InternalError);
  EXPECT_THROW(comm->recv(data.data(), 4, 1, 0), InternalError);
  comm->wait_sends();  // nothing in flight: returns
}

TEST(LocalCommunicator, AllToAllCopiesWithDisplacements) {
  auto comm = make_local_communicator();
  const std::vector<float> send = {9, 9, 1, 2, 3, 9};
  std::vector<float> recv(5, 0.0f);
  const std::vector<int64_t> counts = {3}, send_displs = {2}, recv_displs = {1};
  comm->all_to_all_v(send.data(), counts, send_displs, recv.data(), counts, recv_displs);
  EXPECT_EQ(recv, (std::vector<float>{0, 1, 2, 3, 0}));

  const std::vector<int64_t> zero = {0}, at = {0};
  comm->all_to_all_v(send.data(), zero, at, recv.data(), zero, at);
  EXPECT_EQ(recv, (std::vector<float>{0, 1, 2, 3, 0}));

  const std::vector<int64_t> two = {2, 2};
  EXPECT_THROW(comm->all_to_all_v(send.data(), two, two, recv.data(), two, two), InternalError);
  const std::vector<int64_t> other = {2};
  EXPECT_THROW(comm->all_to_all_v(send.data(), counts, at, recv.data(), other, at), InternalError);
}

// Sets an environment variable for one scope, restoring it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value, 1); else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1); else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(LaunchedByMpi, ReadsTheLaunchersEnvironment) {
  ScopedEnv ompi("OMPI_COMM_WORLD_SIZE", nullptr);
  ScopedEnv pmi("PMI_SIZE", nullptr);
  EXPECT_FALSE(launched_by_mpi());
  {
    ScopedEnv four("OMPI_COMM_WORLD_SIZE", "4");
    EXPECT_TRUE(launched_by_mpi());
  }
  {
    ScopedEnv one("OMPI_COMM_WORLD_SIZE", "1");  // mpirun -np 1: nothing to distribute
    EXPECT_FALSE(launched_by_mpi());
  }
  {
    ScopedEnv hydra("PMI_SIZE", "2");
    EXPECT_TRUE(launched_by_mpi());
  }
  {
    ScopedEnv junk("OMPI_COMM_WORLD_SIZE", "4x");
    EXPECT_FALSE(launched_by_mpi());
  }
}

TEST(MpiCommunicator, WithoutMpiSaysHowToGetIt) {
  if (built_with_mpi()) GTEST_SKIP() << "MPI is built in: tests/backend/communicator_mpi_test.cpp runs it under mpirun";
  try {
    make_mpi_communicator();
    FAIL() << "make_mpi_communicator did not throw";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("libopenmpi-dev"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace ragged::backend
