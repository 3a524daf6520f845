// Package outage runs a zone outage against one controller, kube's or taintevict's, on the
// apparatus (package apparatus), and measures it: the time from the first tainted node until
// every pod that does not tolerate the taint has had its DELETE answered, the goroutines and
// heap it took, the peak RSS of the process, and the API requests per eviction.
//
// Both controllers are fed the same updates through their exported NodeUpdated and
// PodUpdated methods, as their informer event handlers would feed them: first the untainted
// cluster, as an informer's initial list (not timed), then, for every node, the update that
// adds the node.kubernetes.io/unreachable NoExecute taint, after the node informer's store
// has been updated; the cluster then holds the tainted node only. Each pod a DELETE removed
// is then taken out of the pod informer's store and given to the controller as a deleted
// pod, after the DELETE's answer, as a watch delivers it (apparatus.PodWatch), so that both
// controllers can drop what they kept of it. Both log to a discarding logger (klog's
// global one included), and both record their Kubernetes Events through client-go's event
// broadcaster into the apparatus, which counts them.
//
// Run measures one controller in the calling process; figures of the whole process (peak
// RSS) are only meaningful when each controller runs in a process of its own, as
// cmd/sidebyside arranges.
//
// A third side, "floor", is no competitor: taintevict's drop-in controller without its
// eviction Manager, which deletes every untolerating pod of a node as soon as the node is
// tainted, with the drop-in's requests and Events and nothing scheduled (see Impls). Its
// figures are what the apparatus, the requests and the Events cost alone, so kube's figure
// over the floor's bounds what any controller making those requests and Events could gain
// on this apparatus.
//
// RunDevice measures a device outage the same way, against kube's device taint eviction
// controller (devicetainteviction.New) and taintevict's (clientgo/device.Controller): a DRA
// driver taints every device it publishes at once. Both controllers run with their own
// informers, fed through watch channels of the apparatus (the ResourceSlices' updates, and
// each pod's deletion after its DELETE was answered), since neither exposes its event
// handlers; a sentinel pod, evicted before the measurement, shows that both have handled
// the initial listing.
package outage
