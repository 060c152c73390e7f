package consumer

import (
	"context"
	"fmt"
	"runtime"
	"strings"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

const maxPanicFrames = 32

// callHandler runs h and turns a panic into *inbox.PanicError (the Go form of the seed's stack
// overflow), which uses the unknown-failure budget. The panic value itself is never kept: it
// can hold payload fragments or credentials; only its type and the function names of the stack.
func callHandler(ctx context.Context, h ports.Handler, d ports.Dispatch) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &inbox.PanicError{ValueType: fmt.Sprintf("%T", p), Frames: panicFrames()}
		}
	}()
	return h.Handle(ctx, d)
}

// panicFrames lists the function names of the panicking stack, innermost first, without the
// runtime's panic machinery, file paths, line numbers or arguments.
func panicFrames() []string {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(3, pcs) // skip runtime.Callers, panicFrames and the deferred func
	frames := runtime.CallersFrames(pcs[:n])
	var out []string
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, "/consumer.callHandler") {
			return out // below are the consumer's own frames
		}
		if f.Function != "" && !strings.HasPrefix(f.Function, "runtime.") {
			out = append(out, f.Function)
		}
		if !more || len(out) == maxPanicFrames {
			return out
		}
	}
}
