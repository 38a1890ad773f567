/*
 * uring-sendzc: each message's 8 fields sent as linked IORING_OP_SEND_ZC requests over TCP; the
 * notifications counted, and those that say the data was copied (IORING_SEND_ZC_REPORT_USAGE).
 */
#include "uringwl.h"

int main(int argc, char **argv)
{
	static const struct tcp_workload w = {
		.name = "uring-sendzc", .options = WL_OPT_TCP | WL_OPT_URING, .setup = uring_setup_zc,
		.send_one = uring_send_one, .finish = uring_finish, .teardown = uring_teardown,
		.report = uring_report,
	};

	return tcp_workload_main(argc, argv, &w);
}
