#!/bin/sh
# The portable part of the suite, run inside each kernel that make test-kernels boots: for each
# method, the site -> method table (lines "SITE METHOD_ASKED SITE_NAME CHOSEN": the default, then
# --method kprobe and tracepoint), then the tests. With "table", the table alone (make test-kernels
# asks it of this machine's kernel too); with "rt", the tests of what a PREEMPT_RT kernel changes:
# programs preempted and threads moved mid-call, softirqs in threads (the ledgers of every kind of
# workload, threads and processes sharing CPUs, and the choice of probes there); with "old", on a
# kernel before bpf_loop() (5.17), what its compat object gives.
cd "$(dirname "$0")/.." || exit 2
for m in default kprobe tracepoint; do
	opt=--method=$m
	[ $m = default ] && opt=
	./zctrace probes $opt | awk -v m=$m '/^[a-z_]+ +[a-z_]+ /{ print "SITE", m, $1, $2 }'
done
[ "${1:-}" = table ] && exit 0
# a kernel before bpf_loop() (Debian 11's 5.10): the compat object, with its fallbacks, on the
# core shapes: the four TCP ledgers at 1 KiB x 4 threads and at 64 KiB x 1, small zerocopy sends
# run again and again (their notices coalesce at the timing's whim), UDP, the file and pipe ledgers
[ "${1:-}" = old ] && exec /usr/bin/python3 tests/run.py \
	'probes_report$' 'method_matrix_tracepoint$' \
	'ledger_tcp-twocopy_1K_4thr$' 'ledger_tcp-onecopy_1K_4thr$' 'ledger_tcp-zerocopy_1K_4thr$' \
	'ledger_tcp-sendfile_1K_4thr$' 'ledger_tcp-twocopy_64K_1thr$' 'ledger_tcp-onecopy_64K_1thr$' \
	'ledger_tcp-zerocopy_64K_1thr$' 'ledger_tcp-sendfile_64K_1thr$' 'ledger_tcp-zerocopy_64K_4thr$' \
	'zerocopy_notices_coalesced$' 'zerocopy_small_messages_repeated$' \
	'file_file-readwrite_cold$' 'file_file-sendfile_warm$' 'file_file-splice_cold$' \
	'file_file-copyrange_warm$' 'pipe_copy_thread$' 'pipe_copy_process$' \
	'sock_udp-copy_2thr_process$' 'sock_udp-zerocopy_1thr_thread$' 'sock_unix-stream_2thr_process$' \
	'boundary_mmsg_calls_exact$' 'top_counts_a_process_exactly$' 'export_prometheus_round_trip$' \
	'top_tcp_counters_exact$' 'top_tcp_copies_from_counters$' 'top_counts_a_real_server_exactly$' \
	'top_cost_of_copies$' 'export_copy_cpu_seconds$' 'cost_walk_on_recorded_stacks$' 'cost_of_tcp_copies$' 'cost_of_user_copies$' 'cost_of_a_commands_own_copies$' \
	'cost_of_zerocopy_pinning$' 'cost_of_pipes$' \
	'cost_turned_off_and_bad_rates$' 'cost_refused_never_stops_a_run$' 'timed_copies_cross_check$'
[ "${1:-}" = rt ] && exec /usr/bin/python3 tests/run.py \
	'probes_report$' 'json_schema$' 'preempt_rt_passes_fentry_over$' 'preempt_rt_prefers_tracepoints$' \
	'ledger_tcp-twocopy_64K_1thr$' 'ledger_tcp-onecopy_64K_1thr$' 'ledger_tcp-zerocopy_64K_1thr$' \
	'ledger_tcp-sendfile_64K_1thr$' 'ledger_tcp-zerocopy_64K_4thr$' 'ledger_uring-sendzc_64K_4thr$' \
	'ledger_tcp-zerocopy_1K_4thr$' 'zerocopy_notices_coalesced$' 'zerocopy_small_messages_repeated$' \
	'file_file-readwrite_cold$' 'file_file-sendfile_warm$' 'file_file-splice_cold$' \
	'pipe_copy_thread$' 'pipe_copy_process$' \
	'sock_udp-copy_2thr_process$' 'sock_udp-zerocopy_1thr_thread$' 'sock_unix-stream_2thr_process$' \
	'micro_syscall_counts_exact$' 'micro_pagefault_counts_exact$' 'boundary_mmsg_calls_exact$' \
	'processes_sharing_a_cpu_counted_apart$' 'top_cost_of_copies$' 'export_copy_cpu_seconds$' \
	'top_tcp_counters_exact$' 'top_tcp_counters_socket_passed$' 'top_tcp_counters_other_namespace$' 'top_tcp_counters_before_the_census$' \
	'top_tcp_counters_refused$' 'top_tcp_counters_reused_sockets$' 'top_tcp_counters_past_4gib$' \
	'export_tcp_counters$' 'top_tcp_copies_from_counters$' 'top_counts_a_real_server_exactly$' \
	'cost_walk_on_recorded_stacks$' 'cost_of_tcp_copies$' 'cost_of_user_copies$' 'cost_of_a_commands_own_copies$' \
	'cost_of_zerocopy_pinning$' 'cost_of_pipes$' 'cost_turned_off_and_bad_rates$' 'cost_refused_never_stops_a_run$' 'timed_copies_cross_check$'
# a stock kernel: fentry is its default method (probes_report checks that --method fentry changes
# nothing), so the ledgers below are its fentry method matrix, and method_matrix_fentry is left out
exec /usr/bin/python3 tests/run.py \
	'probes_report$' 'json_schema$' 'method_matrix_kprobe$' 'method_matrix_tracepoint$' \
	'ledger_tcp-twocopy_64K_1thr$' 'ledger_tcp-onecopy_64K_1thr$' 'ledger_tcp-zerocopy_64K_1thr$' \
	'ledger_tcp-sendfile_64K_1thr$' 'ledger_tcp-zerocopy_64K_4thr$' 'ledger_tcp-zerocopy_1K_4thr$' \
	'zerocopy_notices_coalesced$' 'zerocopy_small_messages_repeated$' \
	'file_file-readwrite_cold$' 'file_file-sendfile_warm$' 'file_file-splice_cold$' \
	'file_file-copyrange_warm$' 'file_serve-readsend_cold_64K$' 'file_serve-sendfile_cold_64K$' \
	'pipe_copy_thread$' 'pipe_copy_process$' 'pipe_vmsplice_loopback$' 'pipe_vmsplice_netns$' \
	'pipe_sites_by_raw_tp$' 'pipe_paths_exact$' \
	'sock_udp-copy_2thr_process$' 'sock_udp-zerocopy_1thr_thread$' 'sock_unix-stream_2thr_process$' \
	'sock_udp-copy_netns_1thr$' 'sock_udp-zerocopy_netns_1thr$' 'sock_udp-zerocopy_gso_thread$' \
	'sock_udp-copy_ipv6$' 'sock_workload_bad_options$' \
	'remote_fileread_seq_thread_warm$' \
	'command_and_children_traced$' 'offcpu_time_covers_sleeps$' 'tcp_send_copies_one_per_call$' 'processes_sharing_a_cpu_counted_apart$' 'attach_to_running_pid$' \
	'micro_syscall_counts_exact$' 'micro_fileread_pages_exact$' 'micro_pagefault_counts_exact$' \
	'micro_tcp_rtt_peer_netns$' 'micro_tcp_bw_peer_netns$' 'micro_tcp_connect_peer_netns$' \
	'netns_zerocopy_path$' 'unattributed_where_a_site_is_refused$' 'boundary_mmsg_calls_exact$' 'boundary_fd_reused_by_another_type$' 'boundary_receive_sleeps_before_its_exit$' 'traced_python_mixed_paths$' 'io_syscalls_at_their_functions$' 'udp_zerocopy_pins_exact$' 'robust_refused_program_falls_back$' \
	'raw_tp_flavours_count_the_same$' \
	'ledger_uring-send_64K_1thr$' 'ledger_uring-sendzc_64K_1thr$' 'ledger_uring-sendzc_64K_4thr$' \
	'uring_async_uring-sendzc_process$' 'uring_sqpoll_uring-sendzc_thread$' 'netns_uring-sendzc_path$' \
	'uring_sendzc_without_usage_reports$' 'uring_notices_fall_back$' uring_file \
	'top_counts_a_process_exactly$' 'top_counts_threads_exactly$' 'top_counts_files_where_measured$' \
	'top_by_cgroup_and_comm$' 'top_evictions_counted$' 'top_cost_of_copies$' 'census_attach_points$' \
	'top_tcp_counters_exact$' 'top_tcp_counters_other_namespace$' 'top_tcp_counters_before_the_census$' 'top_tcp_counters_socket_passed$' \
	'top_tcp_copies_from_counters$' 'top_counts_a_real_server_exactly$' \
	'top_tcp_counters_refused$' 'top_tcp_counters_reused_sockets$' 'top_tcp_counters_past_4gib$' \
	'export_tcp_counters$' \
	'export_prometheus_round_trip$' 'export_says_what_it_measures$' 'export_usage_errors$' 'export_copy_cpu_seconds$' \
	'floor_attaches_empty_programs$' 'detach_after_the_report_leaves_nothing$' 'sweep_loads_one_tracer$' 'sweep_stopped_leaves_nothing$' \
	'cost_walk_on_recorded_stacks$' 'cost_of_tcp_copies$' 'cost_of_user_copies$' 'cost_of_a_commands_own_copies$' 'cost_of_zerocopy_pinning$' 'cost_of_pipes$' \
	'cost_turned_off_and_bad_rates$' 'cost_refused_never_stops_a_run$' 'timed_copies_cross_check$'
