package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// The exit codes.
const (
	exitOK      = 0
	exitCluster = 1 // the cluster could not answer
	exitUsage   = 2 // the command line is wrong
)

// exitError is an error with the exit code it ends the command with.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError returns an error that ends the command with exitUsage.
func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	stop()
	os.Exit(code)
}

// run is main without the exit: the exit code of a run with args.
func run(ctx context.Context, args []string, streams genericiooptions.IOStreams) int {
	cmd := newRootCommand(streams, deps{})
	cmd.SetArgs(args)
	return exitOf(cmd.ExecuteContext(ctx), streams.ErrOut)
}

// exitOf writes err, if any, to errOut on one line and returns the exit code it means.
func exitOf(err error, errOut io.Writer) int {
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(errOut, "kubectl-taintevict:", err)
	var e *exitError
	switch {
	case errors.As(err, &e):
		return e.code
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return exitCluster
	}
	return exitUsage // cobra's own errors: an unknown flag or command, a bad value
}

// deps are what the commands take from outside; the zero deps are the real ones.
type deps struct {
	// newClient, when not nil, replaces the clients the cluster flags make (the tests give
	// a fake clientset).
	newClient clientFunc
	// now, when not nil, replaces time.Now as "now" of a simulation.
	now func() time.Time
}

// command is what every command has: its streams, the cluster flags, the clients they
// make, the JSON and YAML printers, and "now".
type command struct {
	streams   genericiooptions.IOStreams
	config    *genericclioptions.ConfigFlags
	newClient clientFunc
	print     *genericclioptions.JSONYamlPrintFlags
	now       func() time.Time
}

func newCommand(streams genericiooptions.IOStreams, config *genericclioptions.ConfigFlags, d deps) command {
	return command{streams: streams, config: config, newClient: d.newClient, print: genericclioptions.NewJSONYamlPrintFlags(), now: d.now}
}

// newRootCommand returns the command tree.
func newRootCommand(streams genericiooptions.IOStreams, d deps) *cobra.Command {
	config := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use: "kubectl-taintevict",
		// kubectl runs it as "kubectl taintevict": the help says so.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl taintevict"},
		Short:       "Know what a NoExecute taint does before it lands, and why a pod is or is not evicted",
		Long: `kubectl taintevict simulates taint-based eviction with the engine of the taintevict
controller, in dry run, over the nodes and pods of the cluster: what a NoExecute taint
would evict, when, and why (what-if), and what will happen to one pod (explain).

Exit codes: 0 when the question was answered; 1 when the cluster could not answer (the API
server cannot be reached, RBAC forbids a list, a node or a pod is not found); 2 for a wrong
command line (an unknown flag, a malformed taint, an effect other than NoExecute).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// A bare "kubectl taintevict" prints the help.
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError("unknown command %q (see kubectl taintevict --help)", args[0])
			}
			return cmd.Help()
		},
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError("%v", err) })
	config.AddFlags(root.PersistentFlags())
	if d.newClient == nil {
		d.newClient = clientsOf(config, streams.ErrOut)
	}
	if d.now == nil {
		d.now = time.Now
	}
	root.AddCommand(newWhatIfCommand(streams, config, d), newExplainCommand(streams, config, d), newOptionsCommand(streams))
	return root
}

// newOptionsCommand lists the flags every command takes, as "kubectl options" does.
func newOptionsCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "options",
		Short: "Print the flags every command takes (the cluster's: --kubeconfig, --context, -n...)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(streams.Out, "The following options can be passed to any command:")
			fmt.Fprintln(streams.Out)
			_, err := io.WriteString(streams.Out, cmd.Root().PersistentFlags().FlagUsages())
			return err
		},
	}
}
