# The correctness bar of the backend: `mpirun -np N ragged run ... --check-reference`
# trains a few steps sharded over N host ranks and compares every parameter
# with a single-process unsharded reference; with --ordered-reductions the
# comparison is bitwise, and a set of runs with the collectives a normal run
# uses (MPI's sum order) checks those within the stated tolerance. Small Llama-style and MoE models, ragged and fsdp2
# layouts, element/row/block granularity, AdamW, 8-bit Adam and Muon, on 4
# ranks and the uneven 3 and 5, and under HSDP.
list(APPEND RAGGED_BACKEND_TEST_SRCS
  ${CMAKE_CURRENT_LIST_DIR}/run_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/mesh_launch_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/reference_tp_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/unit_shard_init_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/expert_parallel_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/expert_rows_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/verdict_test.cpp)

if(RAGGED_HAVE_MPI AND MPIEXEC_EXECUTABLE)
  execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE _ragged_mpirun_version ERROR_QUIET)
  set(_ragged_run_flags)
  if(_ragged_mpirun_version MATCHES "Open MPI|OpenRTE")
    set(_ragged_run_flags --oversubscribe)
  endif()

  # Each run's verdict is read from its --json (check_run_verdict.cmake), not
  # from the exit code alone.
  # The checks train on 32-token sequences (the scenarios' 128 cost twice the
  # suite's time on two cores and exercise no other path; cp 4's head-tail
  # chunks still get 4 tokens each).
  set(_ragged_check_sequence --seq-len 32)
  set(_ragged_verdict_script ${CMAKE_CURRENT_LIST_DIR}/check_run_verdict.cmake)

  # ragged_add_run_check(NP MODEL STRATEGY GRANULARITY OPTIMIZER [SHARD_GROUP])
  # With SHARD_GROUP < NP the run is HSDP: NP / SHARD_GROUP replicas.
  # RAGGED_RUN_REDUCTIONS: "ordered" (bitwise) or "normal" (in tolerance).
  set(RAGGED_RUN_REDUCTIONS ordered)
  # The name suffix, ragged run flags and verdict of RAGGED_RUN_REDUCTIONS.
  macro(ragged_run_reductions)
    set(_reductions_args --ordered-reductions)
    set(_expect pass)
    if(RAGGED_RUN_REDUCTIONS STREQUAL "normal")
      set(_name "${_name}.normal_reductions")
      set(_reductions_args)
      set(_expect tolerance)
    endif()
  endmacro()
  function(ragged_add_run_check np model strategy granularity optimizer)
    set(_name "backend.run.np${np}.${model}.${strategy}.${granularity}.${optimizer}")
    ragged_run_reductions()
    set(_hsdp_args)
    if(ARGC GREATER 5)
      set(_name "${_name}.hsdp${ARGV5}")
      set(_hsdp_args --shard-group ${ARGV5})
    endif()
    string(REPLACE ":" "" _name "${_name}")
    set(_granularity_args)
    if(NOT granularity STREQUAL "default")
      set(_granularity_args --granularity ${granularity})
    endif()
    # Shampoo in 128-wide blocks: several a matrix, each root a 128 x 128
    # eigensolve (the default 1,024 makes one block of the whole matrix, and
    # the runs took twice as long for the same paths).
    set(_optimizer_args)
    if(optimizer STREQUAL "shampoo")
      set(_optimizer_args --set training.optimizer.shampoo.block_size=128)
    endif()
    set(_command ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${_ragged_run_flags}
        $<TARGET_FILE:ragged> run ${model} --gpus ${np} --strategy ${strategy} ${_granularity_args}
        --optimizer ${optimizer} ${_optimizer_args} ${_hsdp_args} --steps 2 --warmup 1 --check-reference ${_reductions_args}
        --verify-collectives --json ${_ragged_check_sequence})
    string(REPLACE ";" "|" _command "${_command}")
    add_test(NAME ${_name}
      COMMAND ${CMAKE_COMMAND} -DEXPECT=${_expect} "-DCOMMAND=${_command}" -P ${_ragged_verdict_script})
    set_tests_properties(${_name} PROPERTIES
      LABELS "backend;mpi;correctness"
      ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OPENBLAS_NUM_THREADS=1"
      PROCESSORS ${np}
      RESOURCE_LOCK ragged_mpi
      TIMEOUT 300)
  endfunction()

  foreach(model tiny-llama-4xcpu tiny-moe-4xcpu)
    foreach(strategy ragged fsdp2)
      foreach(granularity default rows:4 block:32x32)
        ragged_add_run_check(4 ${model} ${strategy} ${granularity} adamw)
      endforeach()
      if(strategy STREQUAL "ragged")
        ragged_add_run_check(4 ${model} ${strategy} block:32x32 adam8bit)
      endif()
      ragged_add_run_check(4 ${model} ${strategy} default muon)
      ragged_add_run_check(4 ${model} ${strategy} rows:4 muon)
    endforeach()
  endforeach()
  ragged_add_run_check(4 tiny-llama-4xcpu ragged rows:4 sgd)
  # FSDP2's Shard(0) cuts the 32x32 blocks of these models' MLPs across ranks
  # (704 rows over 4 ranks is 176 per rank), so block-wise 8-bit Adam cannot
  # run rank-locally: the run must refuse clearly (the point of RaggedShard).
  add_test(NAME backend.run.np4.fsdp2.adam8bit.refused
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 4 ${_ragged_run_flags}
            $<TARGET_FILE:ragged> run tiny-llama-4xcpu --strategy fsdp2 --granularity block:32x32 --optimizer adam8bit --steps 1)
  set_tests_properties(backend.run.np4.fsdp2.adam8bit.refused PROPERTIES
    LABELS "backend;mpi;correctness"
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OPENBLAS_NUM_THREADS=1"
    PASS_REGULAR_EXPRESSION "fsdp2 cuts 8-bit Adam's blocks across ranks"
    PROCESSORS 4
    RESOURCE_LOCK ragged_mpi
    TIMEOUT 120)
  # Ranks given different scenarios (an MPMD launch) agree to refuse before any
  # other collective: one line from rank 0, exit 2 (was MPI_ERR_TRUNCATE or a hang).
  add_test(NAME backend.run.np4.different_scenarios.refused
    COMMAND ${MPIEXEC_EXECUTABLE} ${_ragged_run_flags} ${MPIEXEC_NUMPROC_FLAG} 2
            $<TARGET_FILE:ragged> run tiny-llama-4xcpu --steps 1
            : ${MPIEXEC_NUMPROC_FLAG} 2 $<TARGET_FILE:ragged> run tiny-llama-4xcpu --steps 1 --strategy fsdp2)
  set_tests_properties(backend.run.np4.different_scenarios.refused PROPERTIES
    LABELS "backend;mpi;correctness"
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OPENBLAS_NUM_THREADS=1"
    PASS_REGULAR_EXPRESSION "ragged: error: the 4 ranks were not given the same scenario and options"
    FAIL_REGULAR_EXPRESSION "error on rank|MPI_ERR"
    PROCESSORS 4
    RESOURCE_LOCK ragged_mpi
    TIMEOUT 120)
  # Bad input every rank reads alike is said once, by the first rank (not
  # once per rank, interleaved), with exit code 2.
  add_test(NAME backend.run.np3.bad_input.said_once
    COMMAND bash -c "out=$(${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 3 ${_ragged_run_flags} $<TARGET_FILE:ragged> run tiny-llama-4xcpu --gpus 3 --set training.bogus=1 2>&1); n=$(grep -c 'ragged: error' <<< \"$out\"); echo \"$out\"; [[ $n == 1 ]] && grep -q 'ragged: error: --set training.bogus' <<< \"$out\"")
  set_tests_properties(backend.run.np3.bad_input.said_once PROPERTIES
    LABELS "backend;mpi;reliability"
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OPENBLAS_NUM_THREADS=1"
    PROCESSORS 3
    RESOURCE_LOCK ragged_mpi
    TIMEOUT 120)
  # 4-row cuts can fall inside a band of 32 x 32 tiles: refused before running.
  add_test(NAME backend.run.np3.rows4.adam8bit.refused
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 3 ${_ragged_run_flags}
            $<TARGET_FILE:ragged> run tiny-llama-4xcpu --gpus 3 --granularity rows:4 --optimizer adam8bit --steps 1)
  set_tests_properties(backend.run.np3.rows4.adam8bit.refused PROPERTIES
    LABELS "backend;mpi;correctness"
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OPENBLAS_NUM_THREADS=1"
    PASS_REGULAR_EXPRESSION "8-bit Adam quantizes 32x32 tiles on one rank"
    PROCESSORS 3
    RESOURCE_LOCK ragged_mpi
    TIMEOUT 120)
  foreach(np 3 5)
    ragged_add_run_check(${np} tiny-llama-4xcpu ragged rows:4 adamw)
    ragged_add_run_check(${np} tiny-llama-4xcpu ragged default adam8bit)
    ragged_add_run_check(${np} tiny-llama-4xcpu fsdp2 block:32x32 adamw)
    ragged_add_run_check(${np} tiny-moe-4xcpu ragged default muon)
  endforeach()
  # HSDP: shard groups of consecutive ranks, the gradient shards all-reduced
  # over the replicas (in order, so still bitwise), replicas checked equal.
  ragged_add_run_check(4 tiny-llama-4xcpu ragged default adamw 2)
  ragged_add_run_check(4 tiny-moe-4xcpu fsdp2 rows:4 muon 2)
  ragged_add_run_check(6 tiny-llama-4xcpu ragged block:32x32 adam8bit 3)
  ragged_add_run_check(4 tiny-llama-4xcpu fsdp2 default adamw 1)
  # FSDP1: the per-parameter gradients concatenated into the flat gradient,
  # pre- and post-divided around the reduce-scatter (the divides at factor 1).
  ragged_add_run_check(4 tiny-llama-4xcpu fsdp1 default adamw)
  ragged_add_run_check(4 tiny-llama-4xcpu fsdp1 default adamw 2)
  # Shampoo: the gradient gathered to each matrix's owner, the owner's block
  # factors kept across steps, the update scattered back.
  ragged_add_run_check(4 tiny-llama-4xcpu ragged default shampoo)
  ragged_add_run_check(4 tiny-llama-4xcpu fsdp2 rows:4 shampoo)
  ragged_add_run_check(4 tiny-moe-4xcpu ragged default shampoo)
  # Pipeline stages (training.mesh.pp): each stage's ranks run its units,
  # activations and their gradients cross stages point-to-point, a stage's
  # gradients are reduced once a step; every schedule, alone and with FSDP
  # (and HSDP) inside the stages, bitwise against the reference.
  # ragged_add_pipeline_check(NP PP SCHEDULE STRATEGY [more ragged run args...])
  # One MPI check of `ragged run`: NAME gets the extra run arguments (ARGN
  # after LABEL) as a suffix; the verdict script judges it against EXPECT.
  function(ragged_add_mpi_run_test name np expect label)
    set(_args ${ARGN})
    list(FIND _args "--" _split)
    list(SUBLIST _args 0 ${_split} _extra)
    math(EXPR _from "${_split} + 1")
    list(SUBLIST _args ${_from} -1 _run)
    if(_extra)
      string(REPLACE ";" "_" _suffix "${_extra}")
      string(REGEX REPLACE "[^A-Za-z0-9_]+" "" _suffix "${_suffix}")
      set(name "${name}.${_suffix}")
    endif()
    set(_command ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${_ragged_run_flags} $<TARGET_FILE:ragged> run
        ${_run} ${_extra} ${_ragged_check_sequence})
    string(REPLACE ";" "|" _command "${_command}")
    add_test(NAME ${name}
      COMMAND ${CMAKE_COMMAND} -DEXPECT=${expect} "-DCOMMAND=${_command}" -P ${_ragged_verdict_script})
    set_tests_properties(${name} PROPERTIES
      LABELS "backend;mpi;correctness;${label}"
      ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OPENBLAS_NUM_THREADS=1"
      PROCESSORS ${np}
      RESOURCE_LOCK ragged_mpi
      TIMEOUT 300)
  endfunction()
  function(ragged_add_pipeline_check np pp schedule strategy)
    string(TOLOWER "${schedule}" _schedule)
    ragged_add_mpi_run_test("backend.run.np${np}.tiny-llama-4xcpu.pp${pp}.${_schedule}.${strategy}" ${np} pass pipeline
      ${ARGN} -- tiny-llama-4xcpu --gpus ${np} --pp ${pp} --strategy ${strategy}
      --set training.pipeline.schedule=${schedule} --set training.pipeline.micro_batches=4
      --set training.gradient_accumulation_steps=4
      --steps 2 --warmup 1 --check-reference --ordered-reductions --verify-collectives --json)
  endfunction()
  foreach(schedule ONE_F_ONE_B GPIPE INTERLEAVED_1F1B ZERO_BUBBLE_H1)
    ragged_add_pipeline_check(2 2 ${schedule} ragged)
  endforeach()
  ragged_add_pipeline_check(4 2 ONE_F_ONE_B ragged)
  ragged_add_pipeline_check(4 2 ONE_F_ONE_B fsdp2)
  # torch.distributed.pipelining's reduction after the chunk: FSDP2 holds the
  # stage's gradients in the reduce dtype and adds each micro-batch's to them.
  ragged_add_pipeline_check(4 2 ONE_F_ONE_B fsdp2 --set training.pipeline.gradient_sync=AFTER_CHUNK_BACKWARD)
  # Each micro-batch's gradients reduce-scattered after its backward (Llama 3's
  # FSDP under stages): the reference reduces each micro-batch too.
  ragged_add_pipeline_check(4 2 ONE_F_ONE_B fsdp2 --set training.pipeline.gradient_sync=EVERY_MICRO_BATCH_GRADIENT_SYNC)
  ragged_add_pipeline_check(4 2 INTERLEAVED_1F1B ragged --set training.pipeline.gradient_sync=EVERY_MICRO_BATCH_GRADIENT_SYNC)
  ragged_add_pipeline_check(4 2 INTERLEAVED_1F1B ragged --optimizer muon)
  ragged_add_pipeline_check(4 2 ONE_F_ONE_B ragged --shard-group 1)
  ragged_add_pipeline_check(3 3 ONE_F_ONE_B ragged)

  # Tensor parallelism (training.mesh.tp, Megatron's sequence-parallel
  # split): a block computes as its attention and MLP parts between the tp
  # group's all-gathers and reduce-scatters of the hidden states, the
  # vocabulary-parallel embedding and loss, the uncut weights' gradients
  # all-reduced over the group; FSDP (and HSDP) among the ranks at the same
  # place in every tp group. Bitwise against the tensor-parallel reference
  # (reference_tp.cpp), which TensorParallelReference checks against the
  # plain one.
  # ragged_add_tensor_parallel_check(NP TP STRATEGY [more ragged run args...])
  function(ragged_add_tensor_parallel_check np tp strategy)
    set(_name "backend.run.np${np}.tiny-llama-4xcpu.tp${tp}.${strategy}")
    ragged_run_reductions()
    ragged_add_mpi_run_test(${_name} ${np} ${_expect} mesh ${ARGN} -- tiny-llama-4xcpu --gpus ${np} --tp ${tp}
      --strategy ${strategy} --steps 2 --warmup 1 --check-reference ${_reductions_args} --verify-collectives --json)
  endfunction()
  ragged_add_tensor_parallel_check(2 2 ragged)
  ragged_add_tensor_parallel_check(4 2 ragged)
  ragged_add_tensor_parallel_check(4 2 fsdp2 --checkpointing full)
  ragged_add_tensor_parallel_check(4 2 zero3 --checkpointing selective)
  ragged_add_tensor_parallel_check(4 4 fsdp1)
  ragged_add_tensor_parallel_check(8 2 ragged --shard-group 2)
  ragged_add_tensor_parallel_check(8 2 ragged --optimizer adam8bit)
  # Context parallelism (training.mesh.cp): each rank holds the head-tail
  # chunks of every sequence, the attention's keys and values gathered over
  # the cp group between the projections and the core, their gradients
  # reduce-scattered; alone and under tp 2 (tp 2 x cp 2 x FSDP 2 on 8 ranks).
  ragged_add_tensor_parallel_check(4 1 fsdp2 --cp 2 --checkpointing full)
  ragged_add_tensor_parallel_check(8 1 ragged --cp 4)
  ragged_add_tensor_parallel_check(8 2 ragged --cp 2)
  ragged_add_tensor_parallel_check(8 2 zero3 --cp 2 --checkpointing selective)
  # Mixture-of-experts blocks on a mesh. Expert parallelism (training.mesh.ep):
  # each rank of an ep group holds 1/ep of every layer's routed experts in a
  # unit of their own, sharded over its expert shard group; the routed rows go
  # to their experts' ranks and back (all-to-alls, counts first), the experts'
  # weight gradients are made there from every rank's rows. Bitwise against
  # the reference, whose experts' gradients are summed on their ranks as the
  # run sums them. Tensor parallelism: the router whole on every tp rank, the
  # experts' columns cut (partial outputs, gate and router gradients).
  # ragged_add_moe_mesh_check(NP TP EP STRATEGY [more ragged run args...])
  function(ragged_add_moe_mesh_check np tp ep strategy)
    set(_name "backend.run.np${np}.tiny-moe-4xcpu.tp${tp}.ep${ep}.${strategy}")
    ragged_run_reductions()
    ragged_add_mpi_run_test(${_name} ${np} ${_expect} mesh ${ARGN} -- tiny-moe-4xcpu --gpus ${np} --tp ${tp}
      --ep ${ep} --strategy ${strategy} --steps 2 --warmup 1 --check-reference ${_reductions_args} --verify-collectives
      --json)
  endfunction()
  ragged_add_moe_mesh_check(2 1 2 ragged)
  ragged_add_moe_mesh_check(4 1 2 ragged)
  ragged_add_moe_mesh_check(4 1 4 ragged)
  ragged_add_moe_mesh_check(4 1 2 ragged --shard-group 2)
  ragged_add_moe_mesh_check(4 1 2 fsdp2 --checkpointing full)
  ragged_add_moe_mesh_check(4 1 2 zero3 --checkpointing selective --set training.gradient_accumulation_steps=2)
  ragged_add_moe_mesh_check(4 2 1 ragged)
  ragged_add_moe_mesh_check(4 2 1 fsdp2 --checkpointing full)
  # tp 2 x FSDP 2 x ep 2 on 8 ranks (dp_shard 4, the experts' FSDP over 2):
  # the routed rows of every token go to the experts' ranks at the same tp
  # rank, whose partial outputs the experts unit's tp reduce-scatter adds.
  ragged_add_moe_mesh_check(8 2 2 ragged)
  ragged_add_moe_mesh_check(8 2 2 fsdp2 --checkpointing full)
  ragged_add_moe_mesh_check(4 2 2 zero3 --checkpointing selective)
  # Muon and Shampoo own whole matrices: a routed expert's matrix goes to an
  # owner in its expert shard group (planner::OwnedMatrix::group), where its
  # ep rank's experts are sharded; the dense ones to owners of the shard group.
  ragged_add_moe_mesh_check(4 1 2 ragged --optimizer muon)
  ragged_add_moe_mesh_check(8 1 2 fsdp2 --optimizer shampoo)

  # The collectives a normal run uses (MPI's reduction order), against the
  # reference within the stated tolerance: the fast path is checked too.
  set(RAGGED_RUN_REDUCTIONS normal)
  foreach(model tiny-llama-4xcpu tiny-moe-4xcpu)
    foreach(strategy ragged fsdp2)
      ragged_add_run_check(4 ${model} ${strategy} default adamw)
    endforeach()
  endforeach()
  ragged_add_tensor_parallel_check(8 4 ragged)
  ragged_add_moe_mesh_check(4 1 2 ragged)
  ragged_add_run_check(4 tiny-moe-4xcpu ragged default muon)
  ragged_add_run_check(4 tiny-llama-4xcpu fsdp1 default adamw 2)
  ragged_add_run_check(4 tiny-moe-4xcpu ragged default shampoo 2)
  set(RAGGED_RUN_REDUCTIONS ordered)
  ragged_add_run_check(4 tiny-moe-4xcpu fsdp2 default shampoo)
  ragged_add_run_check(3 tiny-llama-4xcpu ragged rows:4 shampoo)
  ragged_add_run_check(3 tiny-moe-4xcpu fsdp2 default shampoo)
  ragged_add_run_check(4 tiny-moe-4xcpu ragged default shampoo 2)

  # The checks must be able to fail: one NaN put into a parameter held by
  # rank 3 after step 2 stops the run at that step, named, with exit code 3.
  set(_command ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 4 ${_ragged_run_flags}
      $<TARGET_FILE:ragged> run tiny-llama-4xcpu --steps 2 --warmup 1 --check-reference --ordered-reductions
      --verify-collectives --inject-nan layers.1.mlp.down_proj.weight@2 --json)
  string(REPLACE ";" "|" _command "${_command}")
  add_test(NAME backend.run.np4.injected_nan.fails
    COMMAND ${CMAKE_COMMAND} -DEXPECT=nan -DNAN_TENSOR=layers.1.mlp.down_proj.weight -DNAN_STEP=2
            "-DCOMMAND=${_command}" -P ${_ragged_verdict_script})
  set_tests_properties(backend.run.np4.injected_nan.fails PROPERTIES
    LABELS "backend;mpi;correctness"
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OPENBLAS_NUM_THREADS=1"
    PROCESSORS 4
    RESOURCE_LOCK ragged_mpi
    TIMEOUT 120)

  # A rank lost (SIGSTOP) in a run, a worker lost in a search, a rank lost
  # before the start or after the work: each ends the job within seconds, named (Open MPI's
  # mpirun: -x passes the test's tag to find the rank to stop).
  if(_ragged_mpirun_version MATCHES "Open MPI|OpenRTE")
    foreach(_lost IN ITEMS "backend.run.np2.stopped_rank_times_out:lost_rank_test.sh"
                           "backend.tune.np2.lost_worker_times_out:lost_worker_test.sh"
                           "backend.run.np2.stopped_at_startup_times_out:stop_hook_test.sh startup"
                           "backend.run.np2.stopped_at_exit_times_out:stop_hook_test.sh exit")
      string(REPLACE ":" ";" _lost "${_lost}")
      list(GET _lost 0 _name)
      list(GET _lost 1 _script)
      # "stop_hook_test.sh WHEN": the moment goes first, the command (run) after the binary.
      separate_arguments(_script)
      list(POP_FRONT _script _file)
      set(_run)
      if(_script)
        set(_run run)
      endif()
      add_test(NAME ${_name}
        COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/${_file} ${_script} ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:ragged>
                ${_run} ${_ragged_run_flags})
      set_tests_properties(${_name} PROPERTIES
        LABELS "backend;mpi;reliability"
        ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OPENBLAS_NUM_THREADS=1"
        PROCESSORS 2
        RESOURCE_LOCK ragged_mpi
        TIMEOUT 180)  # a loaded machine's slow mpirun start (lost_rank_lib.sh waits up to 60 s for it)
    endforeach()
  endif()
endif()
