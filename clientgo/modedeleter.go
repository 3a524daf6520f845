package clientgo

import (
	"fmt"

	"k8s.io/client-go/kubernetes"

	"github.com/taintevict/taintevict/eviction"
)

// NewDeleter returns the Deleter that removes pods the Mode's way, through client: a
// [PodDeleter] for ModeDelete (without PDBTimeout), an [EvictionDeleter] for ModeEvict,
// and nil for ModeDryRun. It fails for another Mode ("" too) and when an option is out of
// range.
func (m Mode) NewDeleter(client kubernetes.Interface, opts EvictionDeleterOptions) (eviction.Deleter, error) {
	switch m {
	case ModeDryRun:
		return nil, nil
	case ModeDelete:
		return NewPodDeleter(client, opts.podOptions()), nil
	case ModeEvict:
		d, err := NewEvictionDeleter(client, opts)
		if err != nil {
			return nil, err // not a nil *EvictionDeleter in a non-nil Deleter
		}
		return d, nil
	}
	return nil, fmt.Errorf("clientgo: unknown Mode %q (want %s, %s or %s)", m, ModeDelete, ModeEvict, ModeDryRun)
}
