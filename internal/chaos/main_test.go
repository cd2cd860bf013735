package chaos

import (
	"os"
	"testing"
)

// TestMain lets the test binary double as `kedge run --once` for the
// SIGKILL scenarios (see World.SigkillCycle).
func TestMain(m *testing.M) {
	if configFile := os.Getenv(ChildEnv); configFile != "" {
		os.Exit(RunChildCycle(configFile))
	}
	os.Exit(m.Run())
}
