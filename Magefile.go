//go:build mage

// Magefile builds the backend plugin binary with the Grafana plugin SDK's
// build targets (`mage -v build:linux`, `mage -v` for all platforms); it reads src/plugin.json,
// the SDK's default.
package main

import (
	// mage:import
	build "github.com/grafana/grafana-plugin-sdk-go/build"
)

// Default builds the plugin binary for every platform Grafana runs on.
var Default = build.BuildAll
