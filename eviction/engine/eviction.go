package engine

import (
	"math"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction/engine/internal/budget"
)

// An eviction is all the Engine keeps of one target's eviction, from its first Scheduled
// until it is closed or the Source shows it done, and of the target's lookups waiting for a
// retry. The store holds it, one per key; the schedule, the budgets' waiting sets and
// RetryUnreachable's index hold the same pointer and nothing of it. Under its stripe's lock,
// its state changes only by the transitions below, each making its report here alone. A test
// checks this table against the code's; stats.badTransitions counts a transition made from a
// state its row does not leave:
//
//	transition    from                          to          report
//	open          idle                          scheduled   Scheduled
//	move          scheduled, held, retrying     scheduled   Scheduled
//	moveRunning   running, closing              running     Scheduled
//	hold          scheduled, held, retrying     held        Delayed (when the reason changes)
//	start         scheduled, held, retrying     running     Started
//	dryRun        scheduled, held, retrying     idle        Succeeded (dry run)
//	failRecheck   scheduled, held, retrying     retrying    Failed (Call 0)
//	fail          running                       retrying    Failed
//	failMoved     running                       scheduled   Failed
//	succeed       running, closing              acted       Succeeded
//	close         scheduled, held, retrying     idle        Cancelled or Skipped
//	closeRunning  running                       closing     (owed: the call's end reports it)
//	finish        closing                       idle        Cancelled or Skipped (the one owed)
//	forget        acted                         idle        (none: the Source caught up)
//
// The other methods below change what it keeps within a state.
type eviction struct {
	key    types.NamespacedName
	uid    types.UID
	holder string // the holder whose taint decides the deadline; acted: the one acted on
	due    int64  // unix nanoseconds of the deadline, as Scheduled last reported it
	calls  int32  // Actuator calls made, from 1
	state  state
	flags  flags
	x      *extra // the state only some evictions have; nil for most
}

type state uint8

const (
	idle      state = iota // none is open; it stays only while a lookup waits to be retried
	scheduled              // it waits for its deadline, or for an act worker
	held                   // due, it waits at a budget
	running                // in an Actuator call
	retrying               // a call or the recheck before one failed; the retry waits its backoff
	closing                // closed while a call ran
	// acted: the Actuator did its work. It stays until the Source shows the target gone or
	// bound elsewhere, so that a lagging Source never has it acted on twice.
	acted
	nStates
)

var stateNames = [nStates]string{"idle", "scheduled", "held", "running", "retrying", "closing", "acted"}

func (s state) String() string { return stateNames[s] }

// open reports whether s is between the first Scheduled and a closing report, none owed.
func (s state) open() bool { return s >= scheduled && s <= retrying }

type flags uint8

const (
	// admitted: passed the budgets (a retry asks only those that hold while a condition
	// lasts); it counts for InFlight until it ends.
	admitted    flags = 1 << iota
	unreachable       // the last call failed for want of an answer (Options.Unreachable)
	forwarded         // RetryUnreachable sent the retry back; its failure waits a backoff
)

// extra is what only some evictions have, so that one simply scheduled stays small.
type extra struct {
	since     int64        // FromObservation: unix nanoseconds its countdown started
	hold      *budget.Hold // held, or retrying after a failed recheck while held
	heldFor   Reason       // the reason of the hold, as Delayed reported it
	counted   Reason       // held: the reason Stats counts it under
	until     int64        // held: when to ask the budgets again; 0 for when woken
	fails     int          // consecutive failures since it was last scheduled
	retryAt   int64        // retrying: when the retry goes
	goneBy    int64        // acted and admitted: when its leaving target stops counting
	owed      closeKind    // closing: the report owed
	reason    Reason       // closing: its reason
	returnsAt uint64       // unreachable: RetryUnreachable's count when it failed
	lookups   int          // failed lookups of the target in a row, for an update
	lookupAt  int64        // when the next lookup goes
	loggedAt  int64        // when a failed lookup of it was last logged as an error
}

// closeKind is a closing report other than Succeeded.
type closeKind uint8

const (
	closeCancelled closeKind = iota + 1
	closeSkipped
)

// transition is a row of the table above.
type transition struct {
	name string
	from []state
	to   state
}

var (
	trOpen         = transition{"open", []state{idle}, scheduled}
	trMove         = transition{"move", []state{scheduled, held, retrying}, scheduled}
	trMoveRunning  = transition{"moveRunning", []state{running, closing}, running}
	trHold         = transition{"hold", []state{scheduled, held, retrying}, held}
	trStart        = transition{"start", []state{scheduled, held, retrying}, running}
	trDryRun       = transition{"dryRun", []state{scheduled, held, retrying}, idle}
	trFailRecheck  = transition{"failRecheck", []state{scheduled, held, retrying}, retrying}
	trFail         = transition{"fail", []state{running}, retrying}
	trFailMoved    = transition{"failMoved", []state{running}, scheduled}
	trSucceed      = transition{"succeed", []state{running, closing}, acted}
	trClose        = transition{"close", []state{scheduled, held, retrying}, idle}
	trCloseRunning = transition{"closeRunning", []state{running}, closing}
	trFinish       = transition{"finish", []state{closing}, idle}
	trForget       = transition{"forget", []state{acted}, idle}
	transitions    = []transition{trOpen, trMove, trMoveRunning, trHold, trStart, trDryRun, trFailRecheck,
		trFail, trFailMoved, trSucceed, trClose, trCloseRunning, trFinish, trForget}
)

// cursor is one target's eviction (nil for none) as a decision holds it, its stripe locked.
type cursor[T any] struct {
	e   *Engine[T]
	st  *stripe
	key types.NamespacedName
	ev  *eviction
}

func (ev *eviction) ref() Ref {
	return Ref{Namespace: ev.key.Namespace, Name: ev.key.Name, UID: ev.uid, Holder: ev.holder}
}

func (c *cursor[T]) to(tr transition) {
	from := c.ev.state
	if !slices.Contains(tr.from, from) {
		c.e.stats.badTransitions.Add(1)
	}
	if from == held && tr.to != held {
		c.e.stats.delay(c.ev.x.counted, -1)
		c.ev.x.counted = ""
	}
	c.e.stats.moved(from, tr.to)
	c.ev.state = tr.to
}

func (c *cursor[T]) more() *extra {
	if c.ev.x == nil {
		c.ev.x = &extra{}
	}
	return c.ev.x
}

func (c *cursor[T]) dueTime() time.Time { return nanosTime(c.ev.due, c.e.loc) }

// countdown returns where FromObservation's countdown of the eviction started: now if none
// is open.
func (c *cursor[T]) countdown(now time.Time) time.Time {
	if c.ev != nil && c.ev.state != idle && c.ev.x != nil && c.ev.x.since != 0 {
		return time.Unix(0, c.ev.x.since)
	}
	return now
}

// schedule opens an eviction of the target uid, due at at on holder, or moves the open one
// there; since is FromObservation's countdown start (0 otherwise).
func (c *cursor[T]) schedule(uid types.UID, holder string, at time.Time, since int64) {
	if c.ev == nil {
		c.ev = c.st.put(c.key)
	}
	s := c.ev.state
	c.releaseHold()
	if s == idle || c.ev.uid != uid {
		c.ev.calls, c.ev.flags = 0, 0 // a new eviction
	}
	c.ev.uid, c.ev.holder, c.ev.due = uid, holder, dueNanos(at)
	c.unmarkUnreachable()
	if x := c.ev.x; x != nil {
		x.fails, x.retryAt, x.owed, x.reason = 0, 0, 0, ""
	}
	if since != 0 || c.ev.x != nil {
		c.more().since = since
	}
	switch {
	case s == idle:
		c.to(trOpen)
		if c.e.opts.InFlight.Fraction > 0 {
			// One more kept is more room for InFlight.Fraction: those in line take it now.
			c.e.wake(c.e.gate.Refill())
		}
	case s == running || s == closing:
		c.to(trMoveRunning) // the call goes on; a failure of it retries from here
	default:
		c.to(trMove)
	}
	c.e.obs.Scheduled(c.ev.ref(), at)
}

// hold keeps the due eviction at the budgets with h until until (0: until woken), for
// reason; Delayed reports a new reason.
func (c *cursor[T]) hold(h *budget.Hold, until int64, reason Reason) {
	x := c.more()
	if c.ev.state == held {
		c.e.stats.delay(x.counted, -1)
	}
	report := x.heldFor != reason
	x.hold, x.until, x.heldFor, x.counted = h, until, reason, reason
	c.to(trHold)
	c.e.stats.delay(reason, +1)
	if report {
		c.e.obs.Delayed(c.ev.ref(), reason)
	}
}

func (c *cursor[T]) admit() {
	c.ev.flags |= admitted
	c.ev.x.unhold()
}

func (x *extra) unhold() {
	if x != nil {
		x.hold, x.until, x.heldFor = nil, 0, ""
	}
}

func (c *cursor[T]) start() Attempt {
	c.ev.calls++
	a := Attempt{Call: int(c.ev.calls), Due: c.dueTime()}
	c.to(trStart)
	c.e.obs.Started(c.ev.ref(), a)
	return a
}

func (c *cursor[T]) dryRun() {
	c.end(trDryRun)
	c.e.obs.Succeeded(c.ev.ref(), Attempt{Due: c.dueTime()}, true)
}

// failRecheck records that the recheck before a call failed with err. A hold at the
// budgets stays, so that the retry keeps its slot, with no second Delayed.
func (c *cursor[T]) failRecheck(err error, now time.Time) {
	x := c.more()
	x.retryAt = c.backoff(&x.fails, now)
	c.to(trFailRecheck)
	c.e.obs.Failed(c.ev.ref(), Attempt{Due: c.dueTime()}, err)
}

// fail records that the call cl failed with err: the retry waits its backoff, unless a move
// to a later deadline while the call ran stands. unreach says it failed for want of an
// answer: RetryUnreachable may send the retry back, and the retry goes at once if it was
// called while the call ran (returned); neither for a call that was itself sent back.
func (c *cursor[T]) fail(cl call, err error, now time.Time, unreach, returned bool) {
	x := c.more()
	retryAt := c.backoff(&x.fails, now)
	wasForwarded := c.ev.flags&forwarded != 0
	c.ev.flags &^= forwarded
	c.unmarkUnreachable()
	retryNow := unreach && returned && !wasForwarded
	if retryNow {
		retryAt = now.UnixNano() // its backoff kept: the next failure waits the longer one
	}
	moved := c.ev.due != dueNanos(cl.a.Due) || c.ev.holder != cl.ref.Holder
	if moved && c.ev.due > retryAt {
		c.to(trFailMoved) // moved later while it ran: the move stands
	} else {
		x.retryAt = retryAt
		switch {
		case retryNow:
			c.ev.flags |= forwarded
		case unreach && !wasForwarded:
			c.ev.flags |= unreachable
			x.returnsAt = cl.returns // the count the call started with: one since sends it back
			c.e.unreach.mark(c.ev)
			if c.e.unreach.returns.Load() != cl.returns {
				c.e.queue.ScheduleEarlier(c.ev, struct{}{}, now) // one ran since, maybe before mark
			}
		}
		c.to(trFail)
	}
	c.e.obs.Failed(cl.ref, cl.a, err)
}

// succeed records that the call cl did its work (or found the target gone). It reports
// whether the eviction was closed while the call ran: the caller then decides again.
func (c *cursor[T]) succeed(cl call) (wasClosed bool) {
	wasClosed = c.ev.state == closing
	c.ev.holder = cl.ref.Holder
	admittedBefore := c.ev.flags & admitted
	c.ev.flags &^= admitted // not ended: it counts for the budgets until the Source shows it gone
	c.clearMarks()
	c.ev.flags |= admittedBefore
	c.to(trSucceed)
	c.e.obs.Succeeded(cl.ref, cl.a, false)
	return wasClosed
}

// leaving records that the target acted on is leaving, to be gone by goneBy (zero: not
// known), after which it stops counting for the budgets (see InFlight).
func (c *cursor[T]) leaving(goneBy time.Time, now time.Time) {
	if c.ev.flags&admitted == 0 || goneBy.IsZero() {
		return
	}
	if !now.After(goneBy) {
		c.more().goneBy = goneBy.UnixNano() + 1 // passed a nanosecond after it
		return
	}
	c.clearMarks()
}

// close closes the open eviction: at once, or when the running call ends.
func (c *cursor[T]) close(kind closeKind, reason Reason) {
	if c.ev.state == running {
		x := c.more()
		x.owed, x.reason = kind, reason
		c.to(trCloseRunning)
		return
	}
	c.end(trClose)
	c.report(kind, reason)
}

// finish makes the report owed by an eviction closed while its call ran, which failed.
func (c *cursor[T]) finish() {
	owed, reason := c.ev.x.owed, c.ev.x.reason
	c.end(trFinish)
	c.report(owed, reason)
}

// forget drops the acted eviction, whose target the Source shows gone or moved.
func (c *cursor[T]) forget() { c.end(trForget) }

// end moves the eviction by tr to idle, giving back what it holds at the budgets. It leaves
// the evictions kept before it leaves flight, so that the room InFlight.Fraction gives the
// ones in line (a share of those kept) is already the smaller one.
func (c *cursor[T]) end(tr transition) {
	c.releaseHold()
	c.to(tr)
	c.clearMarks()
}

// backoff counts one more failure in n and returns when its retry goes.
func (c *cursor[T]) backoff(n *int, now time.Time) int64 {
	*n = min(*n+1, math.MaxInt32)
	return now.Add(c.e.opts.Backoff.Delay(*n)).UnixNano()
}

func (c *cursor[T]) report(kind closeKind, reason Reason) {
	if kind == closeSkipped {
		c.e.obs.Skipped(c.ev.ref(), reason)
	} else {
		c.e.obs.Cancelled(c.ev.ref(), reason)
	}
}

func (c *cursor[T]) releaseHold() {
	if x := c.ev.x; x != nil && x.hold != nil {
		c.e.wake(c.e.gate.Release(c.ev, x.hold, c.e.clock.Now().UnixNano()))
		x.unhold()
	}
}

// clearMarks forgets what an ending eviction keeps for its retries, and tells the budgets
// that one they let go has ended.
func (c *cursor[T]) clearMarks() {
	c.unmarkUnreachable()
	c.leaveFlight()
	c.ev.flags &^= forwarded
	if x := c.ev.x; x != nil {
		x.fails, x.retryAt, x.owed, x.goneBy = 0, 0, 0, 0
	}
}

// leaveFlight tells the budgets that an eviction they let go is no longer in flight: it
// ended, or (a retry held while a condition lasts) its calls did nothing, and it is let go
// anew once released.
func (c *cursor[T]) leaveFlight() {
	if c.ev.flags&admitted != 0 && c.e.gate != nil {
		c.e.wake(c.e.gate.Ended(c.e.clock.Now().UnixNano()))
	}
	c.ev.flags &^= admitted
}

func (c *cursor[T]) unmarkUnreachable() {
	if c.ev.flags&unreachable != 0 {
		c.ev.flags &^= unreachable
		c.e.unreach.forget(c.ev)
	}
}

// lookupFailed records that a lookup of the target failed at now, to be retried after its
// backoff. It reports whether to log it as an error: the first, then one a minute.
func (c *cursor[T]) lookupFailed(now time.Time) (logIt bool) {
	if c.ev == nil {
		c.ev = c.st.put(c.key)
	}
	x := c.more()
	x.lookupAt = c.backoff(&x.lookups, now)
	if x.lookups == 1 || now.UnixNano()-x.loggedAt >= int64(sourceErrorInterval) {
		x.loggedAt = now.UnixNano()
		return true
	}
	return false
}

func (c *cursor[T]) lookupSucceeded() {
	if c.ev != nil && c.ev.x != nil {
		c.ev.x.lookups, c.ev.x.lookupAt, c.ev.x.loggedAt = 0, 0, 0
	}
}

// wantsWorker reports whether an act worker has a call to consider at now.
func (c *cursor[T]) wantsWorker(now int64) bool {
	if c.ev == nil {
		return false
	}
	switch c.ev.state {
	case scheduled:
		return c.ev.due <= now
	case held:
		return true // it asks the budgets again, which say how long it still waits
	case retrying:
		return c.ev.x.retryAt <= now || c.ev.flags&forwarded != 0 ||
			c.ev.flags&unreachable != 0 && c.e.unreach.returns.Load() != c.ev.x.returnsAt
	}
	return false
}

// goneByDue ends the count of an acted eviction whose leaving target's GoneBy has passed.
func (c *cursor[T]) goneByDue(now int64) bool {
	if c.ev == nil || c.ev.state != acted || c.ev.x == nil || c.ev.x.goneBy == 0 || c.ev.x.goneBy > now {
		return false
	}
	c.clearMarks()
	return true
}

func (c *cursor[T]) forward() {
	c.unmarkUnreachable()
	c.ev.flags |= forwarded
}

func (c *cursor[T]) lookupDue(now int64) bool {
	return c.ev != nil && c.ev.x != nil && c.ev.x.lookups > 0 && c.ev.x.lookupAt <= now
}

// arm, which ends every decision, puts in the schedule when the eviction next wants a
// worker, or takes it out, and drops an eviction that keeps nothing. A held or retrying one
// may have been woken without its lock (the budgets, RetryUnreachable): arm never moves
// such a wake later; one that finds nothing costs a look.
func (c *cursor[T]) arm() {
	if c.ev == nil {
		return
	}
	at, earlierOnly, ok := c.ev.wakeAt()
	switch {
	case ok && earlierOnly:
		c.e.queue.ScheduleEarlier(c.ev, struct{}{}, time.Unix(0, at))
	case ok:
		c.e.queue.Schedule(c.ev, struct{}{}, time.Unix(0, at))
	case earlierOnly:
	case c.ev.state == idle:
		c.e.queue.Cancel(c.ev) // its entry in the schedule goes now, not at its old time
		c.st.drop(c.ev)
		c.ev = nil
	case c.ev.state == scheduled || c.ev.state == held:
		c.e.queue.Cancel(c.ev)
	}
	// Running, closing or acted: what the schedule may hold for it is past, and finds
	// nothing to do; taking it out would cost two more holds of its lock per eviction.
}

// wakeAt returns when the eviction next wants a worker (ok false: not by itself), and
// whether a wake asked for without its lock may stand earlier than that.
func (ev *eviction) wakeAt() (at int64, earlierOnly, ok bool) {
	at = math.MaxInt64
	switch ev.state {
	case scheduled:
		at = ev.due
	case held:
		if ev.x.until != 0 {
			at = ev.x.until
		}
		earlierOnly = true
	case retrying:
		at, earlierOnly = ev.x.retryAt, true
	case acted:
		if ev.x != nil && ev.x.goneBy != 0 {
			at = ev.x.goneBy
		}
	}
	if x := ev.x; x != nil && x.lookups > 0 {
		at = min(at, x.lookupAt)
	}
	return at, earlierOnly, at != math.MaxInt64
}

// settle opens, moves, keeps or closes the eviction as v shows the target at now. An update
// and the recheck both come here, so that one state gets one decision, whichever sees it.
func (c *cursor[T]) settle(v *view, now time.Time) {
	if c.ev != nil && c.ev.state == acted {
		if v.exists && v.target.UID == c.ev.uid && v.boundTo(c.ev.holder) {
			if v.target.Leaving != "" {
				c.leaving(v.target.GoneBy, now)
			}
			return // acted on already; the Source has not caught up with the action
		}
		c.forget() // the action took effect, or another target took the key
	}
	open := c.ev != nil && c.ev.state.open()
	if c.ev != nil && c.ev.state != idle && v.exists && c.ev.uid != v.target.UID {
		if open {
			c.close(closeCancelled, ReasonReplaced)
		}
		if c.ev.state == closing {
			return // the new target is decided when the call on the old one has ended
		}
		open = false
	}
	c.decide(v, open, now)
}

func (c *cursor[T]) decide(v *view, open bool, now time.Time) {
	openOn, since := "", c.countdown(now)
	if c.ev != nil && c.ev.state != idle {
		openOn = c.ev.holder
	}
	d := c.e.rules.decide(v, openOn, since, now)
	if d.Stay {
		if open {
			kind := closeCancelled
			if d.Skip {
				kind = closeSkipped
			}
			c.close(kind, d.Reason)
		}
		return
	}
	var start int64
	if c.e.opts.DeadlineSource == FromObservation {
		start = since.UnixNano()
	}
	if c.ev != nil && c.ev.state != idle && c.keepsPlace(v.target.UID, d, start, now) {
		if c.ev.state == held {
			c.ev.x.until = now.UnixNano() // what makes it due may have changed: ask the budgets again
		}
		return
	}
	c.schedule(v.target.UID, d.Holder, d.At, start)
}

// keepsPlace reports whether the eviction, to be due as d says, keeps its place: the same
// target, holder and time, or due and already waiting (for a worker, a retry or the
// budgets) or running. Scheduling it anew would report a false move, reset a backoff, and
// give up a token.
func (c *cursor[T]) keepsPlace(uid types.UID, d decision, since int64, now time.Time) bool {
	var was int64
	if c.ev.x != nil {
		was = c.ev.x.since
	}
	if c.ev.uid != uid || c.ev.holder != d.Holder || was != since || !c.ev.state.open() {
		return false
	}
	due := !d.At.After(now)
	switch c.ev.state {
	case running:
		return due && c.ev.due <= now.UnixNano() // the running call acts as a new one would
	case scheduled:
		return c.ev.due == dueNanos(d.At) || due && c.ev.due <= now.UnixNano()
	}
	return due // held or retrying
}

// An eviction keeps its deadline in unix nanoseconds, 8 bytes rather than a time.Time's 24
// and a pointer; the years 1678 to 2262, as the schedule's, later and earlier ones clamped.
var (
	minDue = time.Unix(0, math.MinInt64)
	maxDue = time.Unix(0, math.MaxInt64)
)

func dueNanos(at time.Time) int64 {
	switch {
	case at.Before(minDue):
		return math.MinInt64
	case at.After(maxDue):
		return math.MaxInt64
	}
	return at.UnixNano()
}

func nanosTime(n int64, loc *time.Location) time.Time { return time.Unix(0, n).In(loc) }
