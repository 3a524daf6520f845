// Package budgetflags is the one copy of the command-line flags of the budgets against mass
// eviction (-eviction-rate, -brake-fraction, -in-flight, -namespace-limit, -confirm-fraction
// and the others): the drop-in controller (examples/controller) runs with them, and the
// kubectl-taintevict plugin's what-if and explain simulate the controller with the same
// flags, the same meaning and the same checks.
//
// A value the flag package cannot parse is an error of that flag; a value it parses but
// the engine would refuse is an error of [Flags.Validate] that names the flag (and the
// engine's option). Nothing here keeps state beyond the flags' values.
package budgetflags
