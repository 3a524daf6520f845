// Package queue holds benchmarks only: kube's TimedWorkerQueue
// (k8s.io/kubernetes/pkg/controller/tainteviction) against timedqueue.Queue, in the same
// binary, with the same keys and times.
//
// By default every benchmark runs at a small size, so that CI can run each once
// (-benchtime 1x) in seconds. BENCH_SCALE=full selects the sizes BENCHMARKS.md quotes:
// 100k and 1M pending, and a burst of 1M:
//
//	BENCH_SCALE=full go test -run '^$' -bench 'Add|Replace|Cancel' -count 5 ./queue/
//	BENCH_SCALE=full go test -run '^$' -bench 'Burst/.*/impl=kube$' -benchtime 1x ./queue/
//	BENCH_SCALE=full go test -run '^$' -bench 'Burst/.*/impl=taintevict$' -benchtime 1x ./queue/
package queue
