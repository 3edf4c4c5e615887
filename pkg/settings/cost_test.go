package settings

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCostSettingsDefaultsAndPrices(t *testing.T) {
	s, err := Load([]byte(`{"targets":[
		{"name":"a","url":"http://a/m","costPerHour":3.6,"agent":"n"},
		{"name":"b","url":"http://b/m","agent":"n","gpus":[0,1]},
		{"name":"c","url":"http://c/m"}],
		"gpuAgents":[{"name":"n","url":"http://n/m","costPerGPUHour":2.5}]}`), nil)
	require.NoError(t, err)
	assert.Equal(t, "USD", s.Currency)
	assert.Zero(t, s.EnergyPricePerKWh)
	// A target's own price wins over its agent's.
	assert.Equal(t, Price{PerHour: 3.6, Agent: "n"}, s.PriceOf(s.Targets[0]))
	pb := s.PriceOf(s.Targets[1])
	assert.Equal(t, Price{PerGPUHour: 2.5, Agent: "n", GPUs: []int{0, 1}}, pb)
	assert.True(t, pb.Priced())
	assert.False(t, s.PriceOf(s.Targets[2]).Priced())

	s, err = Load([]byte(`{"currency":"EUR","energyPricePerKWh":0.25}`), nil)
	require.NoError(t, err)
	assert.Equal(t, "EUR", s.Currency)
	assert.Equal(t, 0.25, s.EnergyPricePerKWh)
}

func TestCostSettingsErrorsNameTheField(t *testing.T) {
	cases := map[string]string{
		`{"currency":"usd"}`:         `currency: "usd" is not an ISO 4217 code`,
		`{"currency":"DOLLAR"}`:      `currency: "DOLLAR"`,
		`{"energyPricePerKWh":-0.1}`: "energyPricePerKWh: -0.1 must be a price of zero or more",
		`{"targets":[{"name":"a","url":"http://a/m","costPerHour":-1}]}`:      "targets[0].costPerHour: -1 must be a price",
		`{"gpuAgents":[{"name":"g","url":"http://g/m","costPerGPUHour":-2}]}`: "gpuAgents[0].costPerGPUHour: -2 must be a price",
		`{"targets":[{"name":"a","url":"http://a/m","costPerHour":"3.6"}]}`:   "jsonData",
	}
	for in, want := range cases {
		_, err := Load([]byte(in), nil)
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), want, in)
	}
}
