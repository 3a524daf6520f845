// Package timeout bounds calls on an injected clock: each call's context is cancelled with
// a cause once the call has run for a given time, by a pooled AfterFunc timer where the
// clock has one (no goroutine), or a timer and a goroutine that Stop waits for.
package timeout
