// Command gpx_inferscope is the Inferscope backend plugin binary that Grafana launches.
package main

import (
	"os"

	"github.com/grafana/grafana-plugin-sdk-go/backend/log"

	"github.com/inferscope/inferscope-llm-datasource/pkg/plugin"
)

func main() {
	if err := plugin.Serve(); err != nil {
		log.DefaultLogger.Error(err.Error())
		os.Exit(1)
	}
}
