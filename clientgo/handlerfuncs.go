package clientgo

import (
	"fmt"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// HandlerFuncs returns an informer's callbacks that call f(old, new) with kube's
// convention: old nil for an add, new nil for a delete, whose tombstone is unwrapped. An
// object of another type than *T is ignored, and logged for a delete. f is called from the
// informer's goroutine, after its store has the change.
func HandlerFuncs[T any](logger klog.Logger, f func(old, new *T)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if t, ok := obj.(*T); ok {
				f(nil, t)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, ok1 := oldObj.(*T)
			t, ok2 := newObj.(*T)
			if ok1 && ok2 {
				f(old, t)
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj // the last state the informer knew, as good as any to cancel
			}
			t, ok := obj.(*T)
			if !ok {
				logger.Info("Ignoring a delete event of an unexpected type", "type", fmt.Sprintf("%T", obj))
				return
			}
			f(t, nil)
		},
	}
}
