// Package e2e holds Magnetar's process-level end-to-end tests: they run
// the magnetar binary as an operator does and talk to it only over the
// network, its files and its exit status. Standalone and clustered
// deployments (bookie and broker processes over a real ZooKeeper,
// internal/zktest), the proxy, the functions worker and its instances,
// geo-replication, transactions, the web console (headless Chromium),
// the admin, client, perf, tokens and shell subcommands, Pulsar's
// clients (pulsar-client-go, pulsaradmin) against it, and
// pulsar-client-go's own test suite (TestClientSuite). The package has
// no code of its own outside its tests: cmd/magnetar is the program,
// and its tests cover only its unexported code (configuration, version,
// trace file).
//
// # The binary
//
// The first test that needs magnetar builds it once per test binary:
//
//	go build [-race] -o $TMPDIR/magnetar-e2e-*/magnetar github.com/magnetar-mq/magnetar/cmd/magnetar
//
// with -race exactly when the test binary has it (race_on_test.go,
// race_off_test.go), so `go test -race ./e2e/` checks the processes
// under test for races too. The path is exported as MAGNETAR_E2E_BIN; a
// test binary the tests run again (TestClientSuite, inside a network
// namespace of its own) finds it there and does not build. Setting
// MAGNETAR_E2E_BIN beforehand tests that binary instead. magnetarCommand
// is the exec.Cmd of a subcommand; startMagnetar runs one and waits for
// its ready line ("magnetar standalone ready service=... http=...").
// What startMagnetar starts gets a parent-death signal and is killed at
// the end of its test, so none outlives it.
//
// Some tests run this test binary itself as a child (a producer that is
// killed mid-send, a transactional pipeline): TestMain turns it into
// that child when MAGNETAR_TEST_CHILD_PRODUCER or
// MAGNETAR_TEST_CHILD_TXN_PIPELINE is set.
//
// # Tiers
//
//	go test -short ./e2e/         the quicker tests (-short skips the
//	                              functions, console, client-suite and
//	                              other minute-long tests)
//	go test -race ./e2e/          everything, as scripts/test (the full
//	                              run) and scripts/test e2e do
//	MAGNETAR_SOAK=1 go test ./e2e/ -run 'Chaos|Failover' -timeout 60m
//	                              long iterations (scripts/test soak)
//	go test ./e2e/ -run '^$' -bench Cluster
//	                              the process-level benchmarks
//	                              (BENCHMARKS.md gives their commands)
//
// # Environment
//
//	MAGNETAR_E2E_BIN               the magnetar binary (see above)
//	MAGNETAR_SOAK=1                long iterations (internal/testenv)
//	MAGNETAR_ARTIFACTS             where the console tests keep screenshots
//	MAGNETAR_CLIENT_SUITE_RUN      a -run pattern: only those tests of
//	                               pulsar-client-go's suite
//	CHAOS_DURATION, CHAOS_SEED     TestClusterChaos's length and seed
//	FAILOVER_SESSION_TIMEOUT       TestClusterFailoverTimes's ZooKeeper session
//	MAGNETAR_CLUSTER_BENCH_SECONDS, MAGNETAR_CLUSTER_BENCH_KILLS,
//	MAGNETAR_DISKFULL_ROUNDS, TXNBENCH_*
//	                               benchmark sizes (see each benchmark)
//
// The tests need what scripts/test installs: ZooKeeper and Java, ip and
// unshare (network namespaces), Chromium, PostgreSQL, and the go
// command (the binary and the test functions are built with it).
package e2e
