#include "sim/platform.hpp"

#include <algorithm>
#include <string>

#include <xbt/log.h>

#include "common/errors.hpp"

namespace ragged::sim {

namespace sg4 = simgrid::s4u;
using simgrid::kernel::routing::NetPoint;

void configure_engine() {
  // LV08 (the default) is a TCP fit: x13 latency, x0.97 bandwidth, reverse
  // ACK traffic; RDMA and NVLink are closer to CM02 without cross traffic.
  // TCP-gamma 0 does not lift the window cap in 3.32, hence a huge value.
  xbt_log_control_set("root.thresh:critical");
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:1e15");
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer cannot follow SimGrid's hand-made stack switches (the
  // raw context factory): actors run as threads in a sanitized build.
  sg4::Engine::set_config("contexts/factory:thread");
#endif
}

Platform::Platform(const ClusterSpec& c, int64_t nodes, const NodeList& gpu_nodes) {
  RAGGED_ASSERT(nodes >= 1 && nodes <= c.nodes, "simulated nodes must be between 1 and the cluster's");
  const int64_t per_leaf = std::max<int64_t>(1, std::min(c.nodes_per_leaf, nodes));
  const int64_t leaves = (nodes + per_leaf - 1) / per_leaf;
  const double node_bw = c.node_network_bytes_per_s();
  gpus_.resize(static_cast<size_t>(per_leaf * leaves));
  ports_.resize(gpus_.size());
  gpu_links_.resize(gpus_.size());
  port_links_.resize(gpus_.size());

  pair_links_.resize(gpus_.size());
  const bool mesh = c.nvlink_full_mesh();
  auto make_node = [&](sg4::NetZone* parent, const std::vector<unsigned long>&, unsigned long id) {
    const std::string name = "node" + std::to_string(id);
    auto* zone = mesh ? sg4::create_full_zone(name) : sg4::create_star_zone(name);
    zone->set_parent(parent);
    const bool has_gpus = !gpu_nodes || std::binary_search(gpu_nodes->begin(), gpu_nodes->end(), static_cast<int64_t>(id));
    for (int g = 0; has_gpus && g < c.gpus_per_node; ++g) {
      auto* gpu = zone->create_host(name + "-gpu" + std::to_string(g), 1e15)->seal();
      auto* link = zone->create_split_duplex_link(name + "-nvlink" + std::to_string(g), c.effective_nvlink_bytes_per_s())
                       ->set_latency(c.nvlink_latency_s)
                       ->seal();
      if (!mesh) {
        zone->add_route(gpu->get_netpoint(), nullptr, nullptr, nullptr, {{link, sg4::LinkInRoute::Direction::UP}},
                        true);
      }
      gpus_[id].push_back(gpu);
      gpu_links_[id].push_back(link);
    }
    auto* port = zone->create_host(name + "-net", 1e15)->seal();
    auto* nic = zone->create_split_duplex_link(name + "-nics", node_bw)->set_latency(c.nic_latency_s)->seal();
    if (!mesh) {
      zone->add_route(port->get_netpoint(), nullptr, nullptr, nullptr, {{nic, sg4::LinkInRoute::Direction::UP}}, true);
    }
    // The node's gateway to the fabric is a router behind the NICs: a route
    // from a gateway starts at it, so with the port as gateway the network
    // flows (port to port) would never cross the NICs' link.
    auto* gateway = zone->create_router(name + "-gw");
    if (mesh) add_mesh_routes(zone, c, id, name, port, nic, gateway);
    zone->seal();
    ports_[id] = port;
    port_links_[id] = nic;
    return std::pair<NetPoint*, NetPoint*>{zone->get_netpoint(), gateway};
  };

  // Leaf uplinks: per_leaf / oversubscription spines of the node bandwidth each.
  const auto spines = static_cast<unsigned>(std::max<double>(1.0, static_cast<double>(per_leaf) / c.oversubscription));
  sg4::FatTreeParams params = leaves == 1
      ? sg4::FatTreeParams(1, {static_cast<unsigned>(per_leaf)}, {1}, {1})
      : sg4::FatTreeParams(2, {static_cast<unsigned>(per_leaf), static_cast<unsigned>(leaves)}, {1, spines}, {1, 1});
  sg4::create_fatTree_zone("cluster", nullptr, params, sg4::ClusterCallbacks(make_node), node_bw, c.hop_latency_s,
                           sg4::Link::SharingPolicy::SPLITDUPLEX)
      ->seal();
  gpus_.resize(static_cast<size_t>(nodes));
  ports_.resize(static_cast<size_t>(nodes));
  gpu_links_.resize(static_cast<size_t>(nodes));
  port_links_.resize(static_cast<size_t>(nodes));
  pair_links_.resize(static_cast<size_t>(nodes));
}

// A full zone lists every route: GPU to GPU over the pair's own link, a GPU
// to the port or the gateway over its link as on a star (then the NICs), the
// port to the gateway over the NICs.
void Platform::add_mesh_routes(sg4::NetZone* zone, const ClusterSpec& c, unsigned long id, const std::string& name,
                               sg4::Host* port, sg4::Link* nic, NetPoint* gateway) {
  using Direction = sg4::LinkInRoute::Direction;
  const auto& hosts = gpus_[id];
  const auto& own = gpu_links_[id];
  pair_links_[id].assign(hosts.size(), {});
  for (size_t a = 0; a < hosts.size(); ++a) {
    for (size_t b = a + 1; b < hosts.size(); ++b) {
      auto* pair = zone->create_split_duplex_link(name + "-nvlink" + std::to_string(a) + "-" + std::to_string(b),
                                                  c.effective_pair_bytes_per_s())
                       ->set_latency(c.nvlink_latency_s)
                       ->seal();
      zone->add_route(hosts[a]->get_netpoint(), hosts[b]->get_netpoint(), nullptr, nullptr, {{pair, Direction::UP}},
                      true);
      pair_links_[id][a].push_back(pair);
      pair_links_[id][b].push_back(pair);
    }
    zone->add_route(hosts[a]->get_netpoint(), port->get_netpoint(), nullptr, nullptr,
                    {{own[a], Direction::UP}, {nic, Direction::DOWN}}, true);
    zone->add_route(hosts[a]->get_netpoint(), gateway, nullptr, nullptr, {{own[a], Direction::UP}}, true);
  }
  zone->add_route(port->get_netpoint(), gateway, nullptr, nullptr, {{nic, Direction::UP}}, true);
}

const std::vector<sg4::Link*>& Platform::pair_links(int64_t node, int local) const {
  const auto& links = pair_links_[static_cast<size_t>(node)];
  RAGGED_ASSERT(static_cast<size_t>(local) < links.size(), "a GPU of a full-mesh node whose NVLink is simulated");
  return links[static_cast<size_t>(local)];
}

sg4::Host* Platform::host(const Endpoint& e) const { return e.local < 0 ? ports_[static_cast<size_t>(e.node)] : gpu(e.node, e.local); }

sg4::Host* Platform::gpu(int64_t node, int local) const {
  const auto& hosts = gpus_[static_cast<size_t>(node)];
  RAGGED_ASSERT(static_cast<size_t>(local) < hosts.size(), "a GPU of a node whose NVLink is not simulated");
  return hosts[static_cast<size_t>(local)];
}

sg4::Link* Platform::gpu_link(int64_t node, int local) const {
  const auto& links = gpu_links_[static_cast<size_t>(node)];
  RAGGED_ASSERT(static_cast<size_t>(local) < links.size(), "a GPU of a node whose NVLink is not simulated");
  return links[static_cast<size_t>(local)];
}

}  // namespace ragged::sim
