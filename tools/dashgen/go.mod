module github.com/inferscope/inferscope-llm-datasource/tools/dashgen

go 1.26

require github.com/grafana/grafana-foundation-sdk/go v0.0.22

require gopkg.in/yaml.v3 v3.0.1
