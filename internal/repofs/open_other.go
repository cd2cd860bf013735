//go:build !unix

package repofs

import "os"

const openFlags = os.O_RDONLY
