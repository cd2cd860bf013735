package chaos

import (
	"os"
	"testing"
)

// TestMain lets the test binary double as `kedge run --once` for the
// SIGKILL scenarios (see World.SigkillCycle), and as the bounded process
// of one bad-input case (see runBounded).
func TestMain(m *testing.M) {
	if configFile := os.Getenv(ChildEnv); configFile != "" {
		os.Exit(RunChildCycle(configFile))
	}
	if request := os.Getenv(caseEnv); request != "" {
		os.Exit(runCase(request))
	}
	code := m.Run()
	removeKedgeBinary()
	os.Exit(code)
}
