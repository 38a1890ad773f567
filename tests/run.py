#!/usr/bin/env python3
"""zctrace's test suite: unit tests, then end-to-end runs that really load BPF and trace workloads.

Every end-to-end test asserts kernel figures against independent ones (the workload's own byte
counts, the traffic a helper process generated), exactly. Ends with 'N passed, N failed, N skipped'.

This file lists the tests in the order they run; the tests live in one module per topic (t_*.py),
on the harness (harness.py: test(), zctrace(), traced(), ...) and the ledger checks more than one
topic runs (checks.py). 'run.py --list [NAME...]' prints the names of the tests NAME selects.
"""
import os
import signal
import sys

import checks
import harness
import t_boundary
import t_control
import t_cost
import t_export
import t_files
import t_install
import t_kernels
import t_ledgers
import t_micro
import t_nic
import t_pipes
import t_report
import t_robust
import t_sockets
import t_source
import t_sweep
import t_top
import t_uring


def all_tests():
    """Every test, in the order the suite runs them."""
    tests = [t_report.unit_tests, t_report.probes_report, t_source.bpf_files_compile_alone, t_report.json_schema, t_report.prog_stats_reported,
             t_report.hw_counters_reported_honestly, t_report.perf_roles_by_process,
             t_report.perf_counter_paths_simulated]
    for w in checks.EXPECT:
        for size in checks.SIZES:
            for threads in (1, 4):
                tests.append(t_ledgers.make_tcp_test(w, size, threads))
    tests += t_ledgers.ZEROCOPY_TESTS
    tests += t_cost.COST_TESTS
    tests += t_files.file_tests() + [t_files.file_sites_on_a_filesystem_without_write_events,
                                     t_files.file_workload_bad_options]
    tests += t_micro.micro_tests()
    tests += [t_kernels.make_method_matrix_test(m) for m in ("fentry", "kprobe", "tracepoint")]
    tests += [t_kernels.tracepoint_forced_matches_default, t_kernels.kprobe_flavours_pass_verifier,
              t_control.unrelated_traffic_not_counted, t_control.command_and_children_traced,
              t_control.offcpu_time_covers_sleeps, t_control.tcp_send_copies_one_per_call,
              t_control.processes_sharing_a_cpu_counted_apart,
              t_control.attach_to_running_pid,
              t_control.sigint_stops_cleanly, t_control.live_view_on_a_terminal, t_control.live_view_to_a_pipe,
              t_control.usage_errors,
              t_control.failing_command_fails_run, t_files.check_can_fail,
              t_sweep.sweep_csv_reconciles, t_sweep.sweep_loads_one_tracer, t_sweep.sweep_uring_workloads,
              t_sweep.sweep_json_rows, t_sweep.sweep_failed_run_recorded, t_sweep.sweep_stopped_leaves_nothing,
              t_sweep.sweep_usage_errors,
              t_sweep.plot_writes_figures, t_sweep.plot_partial_file, t_sweep.findings_synthetic_crossovers,
              t_sweep.findings_from_a_real_sweep,
              t_sweep.sweep_micro_grid_rows, t_sweep.sweep_micro_bad_param, t_sweep.plot_micro_figures]
    tests += [t_install.man_page_covers_the_cli, t_install.generated_docs_match_the_table,
              t_install.make_install_runs_from_destdir, t_install.bash_completion_offers_workloads_and_options,
              t_install.deb_build_depends_match_install_deps, t_source.layers_include_downward]
    tests += [t_ledgers.make_netns_tcp_test(w, "64K", t) for w in checks.EXPECT for t in (1, 2)]
    tests += [t_ledgers.make_peer_process_test(w) for w in ("tcp-zerocopy", "tcp-sendfile", "uring-sendzc")]
    tests += [t_ledgers.make_netns_zerocopy_path_test(w) for w in ("tcp-zerocopy", "uring-sendzc")]
    tests += [t_uring.make_uring_issue_test(w, how, peer) for w in ("uring-send", "uring-sendzc")
              for how in ("--async", "--sqpoll") for peer in ((), ("--peer", "process"))]
    tests += [t_uring.uring_sendzc_without_usage_reports, t_uring.uring_options_only_for_uring,
              t_uring.uring_notices_fall_back,
              t_uring.netns_serve_ledgers]
    tests += t_uring.URING_FILE_TESTS
    tests += t_pipes.PIPE_TESTS
    tests += t_sockets.SOCK_TESTS
    tests += [t_uring.make_remote_fileread_test(pat, peer) for pat in ("seq", "random")
              for peer in ((), ("--peer", "process"), ("--netns",))]
    tests += [t_uring.make_remote_fileread_test("random", ("--netns",), "cold")]
    tests += [t_sockets.make_netns_signal_test(signal.SIGINT), t_sockets.make_netns_signal_test(signal.SIGTERM),
              t_sockets.netns_refused_without_rights, t_sockets.netns_usage_errors, t_sockets.netns_link_shaping,
              t_sockets.remote_ends_across_namespaces]
    tests += [t_robust.make_robust_signal_test(signal.SIGINT), t_robust.make_robust_signal_test(signal.SIGTERM),
              t_robust.robust_workload_sigkill,
              t_robust.make_robust_sigkill_test(["tcp-onecopy", "--duration", "8"], 1, "workload"),
              t_robust.make_robust_sigkill_test(["--", "sh", "-c", "sleep 30 & sleep 30"], 3, "command"),
              t_robust.make_robust_command_end_test("kill -SEGV $$",
                                                    "zctrace: command sh killed by signal 11 (SIGSEGV); "
                                                    "the ledger covers the run until then"),
              t_robust.make_robust_command_end_test("exit 3", "zctrace: command sh exited with status 3"),
              t_robust.robust_concurrent_runs, t_robust.robust_bad_input,
              t_robust.robust_json_path_written_or_left_alone,
              t_robust.robust_stdout_unwritable,
              t_robust.robust_missing_capabilities, t_kernels.robust_refused_tracepoint,
              t_kernels.unattributed_where_a_site_is_refused, t_boundary.boundary_mmsg_calls_exact,
              t_boundary.boundary_fd_reused_by_another_type, t_boundary.boundary_receive_sleeps_before_its_exit,
              t_boundary.traced_python_mixed_paths, t_boundary.io_syscalls_at_their_functions,
              t_boundary.udp_zerocopy_pins_exact,
              t_kernels.robust_refused_program_falls_back,
              t_report.two_passes_figures_and_ledger, t_report.untraced_pass_attaches_nothing,
              t_robust.detach_after_the_report_leaves_nothing,
              t_report.default_report_fits_one_screen, t_install.readme_samples_have_the_shape_of_a_fresh_run,
              t_report.pipeline_processes_named,
              t_nic.nic_zerocopy_copied_on_transmit, t_nic.nic_zerocopy_held_on_sg_device,
              t_nic.nic_sendfile_copied_on_transmit,
              t_nic.nic_udp_zerocopy, t_nic.nic_remote_ends, t_kernels.preempt_rt_passes_fentry_over,
              t_kernels.preempt_rt_prefers_tracepoints,
              t_report.floor_attaches_empty_programs,
              t_kernels.raw_tp_flavours_count_the_same, t_kernels.robust_no_btf,
              t_robust.robust_one_byte_messages_60s, t_robust.robust_full_map_is_reported,
              t_top.top_counts_a_process_exactly, t_top.top_counts_threads_exactly,
              t_top.top_counts_files_where_measured,
              t_top.top_by_cgroup_and_comm,
              t_top.top_evictions_counted, t_top.top_cost_of_copies, t_top.top_usage_errors,
              t_top.top_tcp_counters_exact, t_top.top_tcp_counters_other_namespace,
              t_top.top_tcp_counters_before_the_census, t_top.top_tcp_copies_from_counters, t_top.top_counts_a_real_server_exactly,
              t_top.top_tcp_counters_socket_passed, t_top.top_tcp_counters_past_4gib, t_top.top_tcp_counters_refused, t_top.top_tcp_counters_reused_sockets,
              t_top.census_attach_points]
    tests += t_export.EXPORT_TESTS
    return tests


def main():
    only = sys.argv[1:]
    listing = only[:1] == ["--list"]
    if listing:
        only = only[1:]
    elif os.geteuid() != 0:
        print("tests need root (BPF, perf counters)", file=sys.stderr)
        return 2
    # NAME runs the tests whose names hold NAME; NAME$ runs the one test so named
    for t in all_tests():
        if not only or any(t.__name__ == o[:-1] if o.endswith("$") else o in t.__name__ for o in only):
            if listing:
                print(t.__name__)
            else:
                harness.test(t)
    if listing:
        return 0
    results = harness.results
    print(f"{results['passed']} passed, {results['failed']} failed, {results['skipped']} skipped")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
