package settings

import (
	"fmt"
	"slices"
)

// Probe is an Inferscope client-side probe (cmd/inferscope-probe): its /metrics
// page is scraped like a GPU agent's, and its series are joined to the engine
// target it exercises.
type Probe struct {
	// Name becomes the probe's job label; it shares the name space of targets and agents.
	Name string `json:"name"`
	// URL of the probe's metrics page, e.g. http://inferscope-probe:9401/metrics.
	URL           string `json:"url"`
	TLSSkipVerify bool   `json:"tlsSkipVerify,omitempty"`
	// Target names the engine target (from Settings.Targets) the probe's requests
	// reach; queries with source "probe" read the probes of their targets.
	Target string `json:"target"`

	// BearerToken comes from secureJsonData key "<name>.bearerToken".
	BearerToken string `json:"-"`
}

// validateProbes checks probes[] after targets and agents (seen holds the names
// already used, with the field that used them).
func (s *Settings) validateProbes(seen map[string]string) error {
	for i, p := range s.Probes {
		f := fmt.Sprintf("probes[%d]", i)
		if err := claimName(seen, f, p.Name); err != nil {
			return err
		}
		if err := checkURLFor(s.IsRemote(), f+".url", p.URL); err != nil {
			return err
		}
		if p.Target == "" {
			return fmt.Errorf("%s.target: name the engine target this probe exercises", f)
		}
		if _, ok := s.Target(p.Target); !ok {
			return fmt.Errorf("%s.target: %q is not a configured target", f, p.Target)
		}
	}
	return nil
}

// ProbesOf returns the names of the probes exercising any of the targets, in
// settings order; every probe when targets is empty.
func (s *Settings) ProbesOf(targets []string) []string {
	var out []string
	for _, p := range s.Probes {
		if len(targets) == 0 || slices.Contains(targets, p.Target) {
			out = append(out, p.Name)
		}
	}
	return out
}

// Probe returns the probe called name.
func (s *Settings) Probe(name string) (Probe, bool) {
	return byName(s.Probes, name, func(p Probe) string { return p.Name })
}
