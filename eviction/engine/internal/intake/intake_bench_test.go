package intake

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/utils/clock"
)

// BenchmarkBurst: a burst of target updates on 1,000 holders, put by one goroutine while 8
// workers process them, as an outage's pod updates are; ns/op is per update.
func BenchmarkBurst(b *testing.B) {
	in, err := New[int, int](8, nil, clock.RealClock{}, func(int) time.Duration { return time.Second }, time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	holders := make([]string, 1000)
	for i := range holders {
		holders[i] = fmt.Sprintf("node-%d", i)
	}
	keys := make([]Key, 100_000)
	for i := range keys {
		keys[i] = Key{Namespace: "ns", Name: fmt.Sprintf("pod-%d", i)}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		in.Run(ctx, Handlers[int, int]{Holder: func(context.Context, string, int) {}, Target: func(context.Context, Key, int) {}})
		close(done)
	}()
	defer func() { cancel(); <-done }()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		in.PutTarget(holders[i%len(holders)], keys[i%len(keys)], i)
	}
	if _, err := in.WaitIdle(ctx); err != nil {
		b.Fatal(err)
	}
}
