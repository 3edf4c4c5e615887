// Command gpx_inferscope is the Inferscope backend plugin binary that Grafana launches.
package main

import (
	"os"

	"github.com/grafana/grafana-plugin-sdk-go/backend/datasource"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"

	"github.com/inferscope/inferscope-llm-datasource/pkg/plugin"
)

func main() {
	if err := datasource.Manage(plugin.PluginID, plugin.NewInstance, datasource.ManageOpts{}); err != nil {
		log.DefaultLogger.Error(err.Error())
		os.Exit(1)
	}
}
