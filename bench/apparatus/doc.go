// Package apparatus is what both controllers are measured on: a cluster of nodes and pods
// built in memory, informers whose caches are filled directly, and an API client whose pod
// GET, PATCH, UPDATE and DELETE (and event writes) are answered at once, lock-free, and
// counted.
//
// client-go's fake clientset runs every request under one global lock and appends a deep
// copy of it to an action log that never shrinks; with 150,000 requests, that lock and that
// log would be what is measured, for either controller. Client answers the requests the
// controllers make during an eviction itself, and passes everything else (the informers'
// list and watch) to the fake clientset it wraps. PodWatch delivers the deletions it
// answered to the pod informer's store and to the controller, as a watch would.
package apparatus
