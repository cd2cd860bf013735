//go:build unix

package repofs

import (
	"os"
	"syscall"
)

// openFlags open for reading without blocking: opening a named pipe a
// repository commits would otherwise wait for a writer forever. The file
// is refused once opened unless it is a regular file, which the flag does
// not affect.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
