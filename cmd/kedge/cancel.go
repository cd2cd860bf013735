package main

import (
	"context"
	"time"
)

// stopGrace is how long work that was asked to stop may take to notice
// before the command gives up on it: a signal must end kedge within 2 s.
const stopGrace = time.Second

// untilCancelled runs work and returns its result; once ctx ends it waits
// at most stopGrace for work to return, then returns ctx's cause without
// it. Work that checks ctx stops cleanly; work that cannot (indexing a
// repository, rendering kustomizations) is left running, and ends with the
// process.
func untilCancelled[T any](ctx context.Context, work func() (T, error)) (T, error) {
	type result struct {
		value T
		err   error
	}
	done := make(chan result, 1)
	go func() {
		v, err := work()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.value, r.err
	case <-ctx.Done():
	}
	timer := time.NewTimer(stopGrace)
	defer timer.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			return r.value, context.Cause(ctx)
		}
		return r.value, nil
	case <-timer.C:
		var zero T
		return zero, context.Cause(ctx)
	}
}
