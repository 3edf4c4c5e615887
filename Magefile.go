//go:build mage

// Magefile builds the backend plugin binary with the Grafana plugin SDK's
// build targets (`mage -v build:linux`, `mage -v` for all platforms).
package main

import (
	// mage:import
	build "github.com/grafana/grafana-plugin-sdk-go/build"
)

func init() {
	// plugin.json lives at the repository root, not in src/.
	_ = build.SetBeforeBuildCallback(func(cfg build.Config) (build.Config, error) {
		cfg.PluginJSONPath = "."
		return cfg, nil
	})
}

// Default builds the plugin binary for every platform Grafana runs on.
var Default = build.BuildAll
