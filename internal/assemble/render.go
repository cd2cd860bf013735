package assemble

import (
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/sandbox"
)

// RenderLimits maps the render key onto the budgets of the worker
// processes that build and render repository content.
func RenderLimits(cfg *config.Config) (sandbox.Limits, error) {
	memory, err := cfg.Render.MemoryBytes()
	if err != nil {
		return sandbox.Limits{}, err
	}
	return sandbox.Limits{Timeout: cfg.Render.Timeout, Memory: memory, Workers: cfg.Render.Workers}, nil
}

// ConfigureRendering gives the process's render workers the configured
// budgets; every build and render after it runs under them.
func ConfigureRendering(cfg *config.Config) error {
	limits, err := RenderLimits(cfg)
	if err != nil {
		return err
	}
	sandbox.SetDefault(limits)
	return nil
}

// MaxChartBytes is helm.maxChartSize; a configuration that passed
// Validate always has one.
func MaxChartBytes(cfg *config.Config) int64 {
	n, err := cfg.Helm.MaxChartBytes()
	if err != nil {
		return 0
	}
	return n
}
