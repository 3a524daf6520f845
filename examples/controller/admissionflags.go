package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"sync"
	"time"
)

// admissionFlags are the admission webhook's flags. The zero value serves none.
type admissionFlags struct {
	addr     string
	certFile string
	keyFile  string
	deny     float64
	horizon  time.Duration
}

func (a *admissionFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&a.addr, "admission-addr", "", "serve the validating admission webhook on this address over HTTPS, e.g. :9443 (default: none): warnings on node updates that add NoExecute taints and on DeviceTaintRules of effect NoExecute, saying what they evict (deploy/webhook registers it)")
	fs.StringVar(&a.certFile, "admission-tls-cert-file", "", "with -admission-addr: the PEM certificate (chain) the webhook serves, which the API server must trust (the caBundle of the ValidatingWebhookConfiguration); read again when the file changes, as cert-manager renews it")
	fs.StringVar(&a.keyFile, "admission-tls-private-key-file", "", "with -admission-addr: the PEM private key of -admission-tls-cert-file")
	fs.Float64Var(&a.deny, "admission-deny-fraction", 0, "with -admission-addr: refuse a taint (or a DeviceTaintRule) that would evict more than this fraction of the cluster's pods at once, in (0, 1], unless the object carries the annotation "+OverrideAnnotation+"=true (0: never refuse, warn only)")
	fs.DurationVar(&a.horizon, "admission-horizon", 24*time.Hour, "with -admission-addr: how far ahead the webhook's simulation looks; evictions due later are counted at their deadlines")
}

// validate checks the admission flags against the rest of the command line.
func (a admissionFlags) validate(kubeconfig string) error {
	if a.addr == "" {
		if a.certFile != "" || a.keyFile != "" || a.deny != 0 {
			return errors.New("-admission-tls-cert-file, -admission-tls-private-key-file and -admission-deny-fraction need -admission-addr")
		}
		return nil
	}
	if _, _, err := net.SplitHostPort(a.addr); err != nil {
		return fmt.Errorf("-admission-addr %q: want host:port or :port: %v", a.addr, err)
	}
	switch {
	case kubeconfig == "":
		return errors.New("-admission-addr needs -kubeconfig: the in-memory demo has no API server to call it")
	case a.certFile == "" || a.keyFile == "":
		return errors.New("-admission-addr needs -admission-tls-cert-file and -admission-tls-private-key-file: the API server calls webhooks over HTTPS only, with a certificate it trusts")
	case a.deny != 0 && !(a.deny > 0 && a.deny <= 1):
		return fmt.Errorf("-admission-deny-fraction must be in (0, 1], or 0 for off, got %g", a.deny)
	case a.horizon <= 0:
		return fmt.Errorf("-admission-horizon must be positive, got %s", a.horizon)
	}
	return nil
}

// certReloader serves the certificate of a file pair, and reads it again when either file
// changes (a Secret mounted as a volume is updated in place when cert-manager renews it).
// A pair that does not load keeps the last one that did. It is safe for concurrent use.
type certReloader struct {
	certFile, keyFile string

	mu      sync.Mutex
	cert    *tls.Certificate
	modTime [2]time.Time
	size    [2]int64
	checked time.Time
}

// recheck is how often the files are looked at, at most.
const recheck = 10 * time.Second

// newCertReloader loads the pair once; it fails if it does not load.
func newCertReloader(certFile, keyFile string) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile}
	if err := r.load(time.Now()); err != nil {
		return nil, fmt.Errorf("-admission-tls-cert-file, -admission-tls-private-key-file: %w", err)
	}
	return r, nil
}

// load reads the pair if it changed since the last load. r.mu must be held, or r not shared.
func (r *certReloader) load(now time.Time) error {
	r.checked = now
	var mod [2]time.Time
	var size [2]int64
	for i, f := range []string{r.certFile, r.keyFile} {
		st, err := os.Stat(f)
		if err != nil {
			return err
		}
		mod[i], size[i] = st.ModTime(), st.Size()
	}
	if r.cert != nil && mod == r.modTime && size == r.size {
		return nil
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return err
	}
	r.cert, r.modTime, r.size = &cert, mod, size
	return nil
}

// GetCertificate is tls.Config's: the pair, read again if it changed.
func (r *certReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := time.Now(); now.Sub(r.checked) >= recheck {
		_ = r.load(now) // on failure, the last good pair stays
	}
	return r.cert, nil
}
