// Command dashgen writes Inferscope's dashboards (built with the Grafana
// Foundation SDK) as JSON into a directory, by default ../../dashboards.
// It lives in its own module so the plugin binary never links the SDK.
//
//	go run . [-out dir]
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

func main() {
	out := flag.String("out", filepath.Join("..", "..", "dashboards"), "directory to write the dashboards into")
	flag.Parse()
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
