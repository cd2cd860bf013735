package migrate

import "errors"

var errOutside = errors.New("path resolves outside the repository")
