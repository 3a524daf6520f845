package budget

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
)

var bucketT0 = time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)

// bucketOp is one step of a bucket test: advance the clock by step, then either reserve a
// slot from the buckets named in from (and expect it want after bucketT0), or give back
// the slot reserved by step giveBack (an index into the ops).
type bucketOp struct {
	step     time.Duration
	from     []int // indexes into the case's limits; nil means all
	want     time.Duration
	giveBack int // 1-based index of an earlier reserve op; 0: reserve
}

func TestBucket(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name   string
		limits []Rate
		ops    []bucketOp
	}{
		{"a full bucket gives its burst at once, then one slot per interval", []Rate{{10, 3}}, []bucketOp{
			{want: 0}, {want: 0}, {want: 0}, {want: 100 * ms}, {want: 200 * ms},
		}},
		{"a quiet spell refills the bucket up to its burst, no more", []Rate{{10, 2}}, []bucketOp{
			{want: 0}, {want: 0}, {want: 100 * ms},
			{step: time.Hour, want: time.Hour}, {want: time.Hour}, {want: time.Hour + 100*ms},
		}},
		{"burst 1 spaces every slot", []Rate{{2, 1}}, []bucketOp{
			{want: 0}, {want: 500 * ms}, {want: time.Second}, {step: 600 * ms, want: 1500 * ms},
		}},
		{"a fractional rate rounds the interval up, never exceeding the rate", []Rate{{3, 1}}, []bucketOp{
			{want: 0}, {want: 333333334}, {want: 666666668},
		}},
		{"the last slot given back is handed out again", []Rate{{10, 1}}, []bucketOp{
			{want: 0}, {want: 100 * ms}, {want: 200 * ms}, {giveBack: 3}, {want: 200 * ms}, {want: 300 * ms},
		}},
		{"a slot in the middle given back is handed out again first", []Rate{{10, 1}}, []bucketOp{
			{want: 0}, {want: 100 * ms}, {want: 200 * ms}, {giveBack: 2}, {want: 100 * ms}, {want: 300 * ms},
		}},
		{"a slot given back after its time is gone", []Rate{{10, 1}}, []bucketOp{
			{want: 0}, {want: 100 * ms}, {step: 150 * ms, giveBack: 2}, {want: 200 * ms},
		}},
		{"several buckets give the slot of the slowest, and each keeps its own pace", []Rate{{10, 1}, {1, 1}}, []bucketOp{
			{want: 0}, {want: time.Second}, {from: []int{0}, want: 100 * ms}, {from: []int{0}, want: 200 * ms},
			{from: []int{1}, want: 2 * time.Second}, {want: 3 * time.Second},
		}},
		{"a slot given back to several buckets goes back to each", []Rate{{10, 1}, {1, 1}}, []bucketOp{
			{want: 0}, {want: time.Second}, {giveBack: 2}, {from: []int{1}, want: time.Second}, {from: []int{0}, want: 100 * ms},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := testclock.NewFakeClock(bucketT0)
			bs := make([]*bucket, len(tt.limits))
			for i, l := range tt.limits {
				bs[i] = newBucket(l)
			}
			slots := make([]int64, len(tt.ops))
			froms := make([][]*bucket, len(tt.ops))
			for i, op := range tt.ops {
				clk.Step(op.step)
				now := clk.Now().UnixNano()
				if op.giveBack > 0 {
					for _, b := range froms[op.giveBack-1] {
						b.giveBack(slots[op.giveBack-1], now)
					}
					continue
				}
				from := bs
				if op.from != nil {
					from = nil
					for _, j := range op.from {
						from = append(from, bs[j])
					}
				}
				froms[i] = from
				slots[i] = reserve(from, now)
				if got, want := time.Duration(slots[i]-bucketT0.UnixNano()), op.want; got != want {
					t.Errorf("op %d: slot at +%v, want +%v", i+1, got, want)
				}
			}
		})
	}
}

// TestBucketThousand is the figure at the level of the bucket: 1,000 evictions due
// at once with 10 a second and a burst of 10 take slots up to 99 s, in the order asked.
func TestBucketThousand(t *testing.T) {
	b := newBucket(Rate{PerSecond: 10, Burst: 10})
	now := bucketT0.UnixNano()
	last := now
	for i := range 1000 {
		s := reserve([]*bucket{b}, now)
		if s < last {
			t.Fatalf("reservation %d at %v, before the one asked before it (%v)", i+1, s-now, last-now)
		}
		last = s
	}
	if got, want := time.Duration(last-now), 99*time.Second; got != want {
		t.Errorf("1,000th slot at +%v, want +%v", got, want)
	}
}

func TestReserveNoBuckets(t *testing.T) {
	if got, want := reserve(nil, 42), int64(42); got != want {
		t.Errorf("reserve(nil, 42) = %d, want %d", got, want)
	}
}

func TestBucketExtremeRate(t *testing.T) {
	b := newBucket(Rate{PerSecond: 1e12, Burst: 1})
	if got, want := b.interval, int64(1); got != want {
		t.Errorf("interval for 1e12/s: got %d ns, want %d ns", got, want)
	}
}

// TestBucketConforms asks random buckets for slots in random ways (from now, several buckets
// at once, giving slots back) on a clock that moves on at random, and checks that the slots
// each bucket handed out and that were used keep its limit in every window: any n of them
// span at least (n-burst) intervals. It also checks that no reservation lies before now.
func TestBucketConforms(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			limits := []Rate{
				{PerSecond: float64(1 + rng.IntN(20)), Burst: 1 + rng.IntN(4)},
				{PerSecond: float64(1 + rng.IntN(5)), Burst: 1 + rng.IntN(3)},
				{PerSecond: float64(1 + rng.IntN(50)), Burst: 1 + rng.IntN(10)},
			}
			bs := make([]*bucket, len(limits))
			for i, l := range limits {
				bs[i] = newBucket(l)
			}
			type held struct {
				slot int64
				from []int
			}
			var holds []held
			used := make([]map[int64]int, len(bs)) // slot -> how many use it
			for i := range used {
				used[i] = make(map[int64]int)
			}
			now := bucketT0.UnixNano()
			for range 400 {
				now += int64(rng.IntN(3)) * int64(time.Duration(rng.IntN(400))*time.Millisecond)
				if len(holds) > 0 && rng.IntN(4) == 0 {
					k := rng.IntN(len(holds))
					h := holds[k]
					holds = slices.Delete(holds, k, k+1)
					for _, j := range h.from {
						bs[j].giveBack(h.slot, now)
						if used[j][h.slot]--; used[j][h.slot] == 0 {
							delete(used[j], h.slot)
						}
					}
					continue
				}
				var from []int
				for j := range bs {
					if rng.IntN(2) == 0 {
						from = append(from, j)
					}
				}
				sel := make([]*bucket, len(from))
				for k, j := range from {
					sel[k] = bs[j]
				}
				s := reserve(sel, now)
				if s < now {
					t.Fatalf("reserve at %d returned %d, before now", now, s)
				}
				for _, j := range from {
					used[j][s]++
				}
				holds = append(holds, held{slot: s, from: from})
			}
			for j, l := range limits {
				checkConforms(t, j, l, bs[j].interval, used[j])
			}
		})
	}
}

// checkConforms fails t unless the slots keep the limit l: for any i < k in time order,
// slot k lies at least (k-i+1-burst) intervals after slot i.
func checkConforms(t *testing.T, j int, l Rate, interval int64, used map[int64]int) {
	t.Helper()
	var slots []int64
	for s, n := range used {
		for range n {
			slots = append(slots, s)
		}
	}
	slices.Sort(slots)
	for i := range slots {
		for k := i + 1; k < len(slots); k++ {
			if need := int64(k-i+1-l.Burst) * interval; slots[k]-slots[i] < need {
				t.Fatalf("bucket %d (%v/s, burst %d): slots %d..%d (%d of them) span %v, need %v",
					j, l.PerSecond, l.Burst, i, k, k-i+1, time.Duration(slots[k]-slots[i]), time.Duration(need))
			}
		}
	}
}

// TestBucketAtTheBounds hands out slots from buckets at the bounds validate allows: at most
// Burst at once, each later one after the one before, none before now (no overflow).
func TestBucketAtTheBounds(t *testing.T) {
	now := bucketT0.UnixNano()
	for _, l := range []Rate{{1e-3, 1}, {1e-3, 1000}, {1e6, 1e12}, {1, 1e6}} {
		t.Run(fmt.Sprintf("%v a second, burst %d", l.PerSecond, l.Burst), func(t *testing.T) {
			if err := l.Validate("RateLimit"); err != nil {
				t.Fatalf("got %v, want a valid limit", err)
			}
			b := newBucket(l)
			atNow := 0
			prev := int64(-1)
			for i := range 2000 {
				s := reserve([]*bucket{b}, now) - now
				if s < 0 || s < prev {
					t.Fatalf("slot %d: got now%+d ns, after now%+d ns for slot %d: want neither before now nor before it", i, s, prev, i-1)
				}
				if s == 0 {
					atNow++
				}
				prev = s
			}
			if want := min(l.Burst, 2000); atNow != want {
				t.Errorf("got %d slots at once, want Burst %d", atNow, want)
			}
		})
	}
}
