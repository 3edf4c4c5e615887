package settings

import (
	"fmt"
	"math"
	"regexp"
)

// DefaultCurrency is the currency of prices when jsonData has no `currency` key.
const DefaultCurrency = "USD"

// CostSettings holds the root-level price settings of the cost query (jsonData keys
// `currency` and `energyPricePerKWh`). The hardware prices live on targets
// (Target.CostPerHour) and GPU agents (GPUAgent.CostPerGPUHour).
type CostSettings struct {
	// Currency is the ISO 4217 code every price is in (three capital letters); default USD.
	Currency string `json:"currency,omitempty"`
	// EnergyPricePerKWh is the price of one kilowatt-hour (in Currency); 0 leaves the measured
	// energy out of the cost. When set, the cost of a target's GPUs' measured energy
	// (joules / 3.6e6 × price) is added to its hardware cost.
	EnergyPricePerKWh float64 `json:"energyPricePerKWh,omitempty"`
}

// currencyRE is an ISO 4217 alphabetic code.
var currencyRE = regexp.MustCompile(`^[A-Z]{3}$`)

func (c *CostSettings) applyCostDefaults() {
	if c.Currency == "" {
		c.Currency = DefaultCurrency
	}
}

// checkPrice returns a sentence naming field when v is not a finite price ≥ 0.
func checkPrice(field string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return fmt.Errorf("%s: %v must be a price of zero or more", field, v)
	}
	return nil
}

// validateCost checks the currency and every price (root, targets, agents).
func (s *Settings) validateCost() error {
	if !currencyRE.MatchString(s.Currency) {
		return fmt.Errorf("currency: %q is not an ISO 4217 code such as USD or EUR", s.Currency)
	}
	if err := checkPrice("energyPricePerKWh", s.EnergyPricePerKWh); err != nil {
		return err
	}
	for i, t := range s.Targets {
		if err := checkPrice(fmt.Sprintf("targets[%d].costPerHour", i), t.CostPerHour); err != nil {
			return err
		}
	}
	for i, a := range s.GPUAgents {
		if err := checkPrice(fmt.Sprintf("gpuAgents[%d].costPerGPUHour", i), a.CostPerGPUHour); err != nil {
			return err
		}
	}
	return nil
}

// Price is how a target's hardware is priced: a fixed price per hour (Target.CostPerHour),
// or a price per GPU-hour (its agent's GPUAgent.CostPerGPUHour) times the GPUs it uses.
type Price struct {
	// PerHour is the target's own price per hour; 0 when it has none.
	PerHour float64
	// PerGPUHour is its agent's price per GPU-hour, used when PerHour is 0; 0 when none.
	PerGPUHour float64
	// Agent is the target's GPU agent (empty: none).
	Agent string
	// GPUs are the GPU indices the target uses on Agent; empty means every GPU the agent reports.
	GPUs []int
}

// Priced reports whether the price gives the target a hardware cost.
func (p Price) Priced() bool { return p.PerHour > 0 || p.PerGPUHour > 0 }

// PriceOf returns the price of target t: its costPerHour when set (it wins over its agent's
// price), else its agent's costPerGPUHour applied to its GPUs.
func (s *Settings) PriceOf(t Target) Price {
	p := Price{PerHour: t.CostPerHour, Agent: t.Agent, GPUs: t.GPUs}
	if a, ok := s.Agent(t.Agent); ok && p.PerHour == 0 {
		p.PerGPUHour = a.CostPerGPUHour
	}
	return p
}
