// Command dashgen writes Inferscope's dashboards (built with the Grafana
// Foundation SDK) as JSON into a directory, by default ../../dashboards.
// It lives in its own module so the plugin binary never links the SDK.
//
//	go run . [-out dir] [-datasource provisioning.yaml | -targets a,b,c]
//
// Each target of the data source gets a fixed colour on every panel, in the order its
// settings list them (targetPalette): -datasource reads the targets of your own provisioning
// file, -targets names them directly; by default the shipped demo's file.
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	out := flag.String("out", filepath.Join("..", "..", "dashboards"), "directory to write the dashboards into")
	flag.StringVar(&datasourceFile, "datasource", datasourceFile, "data-source provisioning file whose targets get fixed colours, in order")
	targets := flag.String("targets", "", "comma-separated target names to give fixed colours, in order (instead of -datasource)")
	flag.Parse()
	if *targets != "" {
		colourTargets = strings.Split(*targets, ",")
	}
	files, err := Render()
	if err != nil {
		fmt.Fprintln(os.Stderr, "dashgen:", err)
		os.Exit(1)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := os.WriteFile(filepath.Join(*out, name), files[name], 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "dashgen:", err)
			os.Exit(1)
		}
	}
}
