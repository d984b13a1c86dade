package main

// The benefit-per-exclusive-byte policy (spec/benefit.md sections 1 to 15): a bookkeeper that
// admits, promotes and selects victims; the caller removes them.
//
// Every double is computed in the order the spec writes it (BEN-ARITH-1). Go lets a compiler fuse
// x*y + z into one fused multiply-add, rounded once, and does so on arm64, ppc64le and s390x; an
// explicit float64(...) conversion of the product forbids it (the Go spec, "Floating-point
// operators"), so every product that is then added to is wrapped in one.

import (
	"math"
	"sort"
)

const heldBytesMax = 1 << 53 // BEN-KEY-2

type benefitConfig struct {
	probationByteBudget     int64   // BEN-CONF-1
	persistenceHitThreshold int64   // BEN-CONF-2
	minReuseProbability     float64 // BEN-CONF-3
	decayFactor             float64 // BEN-CONF-4
	graceObservations       int64   // BEN-CONF-5
	ghostCapacity           int64   // BEN-CONF-6
	ghostMaxAgeObservations int64   // BEN-CONF-7
}

// newBenefitConfig reads the configuration of PROTO-20, or refuses it (BEN-CONF-8): integers are
// JSON integer literals (never true, never 3.0), doubles any double of PROTO-19.
func newBenefitConfig(cfg fields) (benefitConfig, error) {
	var c benefitConfig
	counts := []struct {
		name   string
		lo, hi int64
		clause string
		into   *int64
	}{
		{"probation_byte_budget", 0, math.MaxInt64, "BEN-CONF-1", &c.probationByteBudget},
		{"persistence_hit_threshold", 1, math.MaxUint32, "BEN-CONF-2", &c.persistenceHitThreshold},
		{"grace_observations", 0, math.MaxInt64, "BEN-CONF-5", &c.graceObservations},
		{"ghost_capacity", 0, math.MaxInt64, "BEN-CONF-6", &c.ghostCapacity},
		{"ghost_max_age_observations", 0, math.MaxInt64, "BEN-CONF-7", &c.ghostMaxAgeObservations},
	}
	for _, k := range counts {
		v, ok := asInt(cfg[k.name], k.lo, k.hi)
		if !ok {
			return c, refuse(k.clause, "%s must be an integer in [%d, %d], not %s", k.name, k.lo, k.hi, shown(cfg[k.name]))
		}
		*k.into = v
	}
	var ok bool
	c.minReuseProbability, ok = asDouble(cfg["min_reuse_probability"])
	if !ok || !(c.minReuseProbability >= 0 && c.minReuseProbability <= 1) { // NaN fails both
		return c, refuse("BEN-CONF-3", "min_reuse_probability must be a finite double in [0, 1], not %s", shown(cfg["min_reuse_probability"]))
	}
	c.decayFactor, ok = asDouble(cfg["decay_factor"])
	if !ok || !(c.decayFactor > 0 && c.decayFactor < 1) {
		return c, refuse("BEN-CONF-4", "decay_factor must be a finite double with 0 < f < 1, not %s", shown(cfg["decay_factor"]))
	}
	return c, nil
}

// costSample is BEN-COST-1.
type costSample struct{ cold, restore float64 }

func (s costSample) valid() bool {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	return finite(s.cold) && finite(s.restore) && s.cold >= 0 && s.restore >= 0
}

// netBenefit is BEN-COST-2: never -0.0.
func (s costSample) netBenefit() float64 {
	if d := s.cold - s.restore; d > 0 {
		return d
	}
	return 0
}

// entry is BEN-ENTRY-1.
type entry struct {
	admitted        bool // state: admitted, or else probation
	hits, misses    int64
	rw, ow          float64
	last            costSample
	exclusiveBytes  int64
	segments        []uint64 // in the order offered
	lastObservation int64
}

// ghost is BEN-GHOST-1.
type ghost struct {
	hits            int64
	rw, ow          float64
	lastObservation int64
}

// segment is a ledger row (BEN-LEDGER-1): its size and the keys that reference it, in order.
type segment struct {
	size int64
	refs []uint64
}

type benefitPolicy struct {
	config  benefitConfig
	clock   int64 // BEN-CLOCK-1
	entries map[uint64]*entry
	ghosts  map[uint64]*ghost
	ledger  map[uint64]*segment
}

func newBenefitPolicy(config benefitConfig) *benefitPolicy {
	return &benefitPolicy{config: config, entries: map[uint64]*entry{}, ghosts: map[uint64]*ghost{}, ledger: map[uint64]*segment{}}
}

// decision is a decision of BEN-ADMIT-1 to BEN-ADMIT-9 or BEN-HIT-2, as PROTO-21 writes it.
type decision struct {
	Kind   string     `json:"kind"`
	Reason string     `json:"reason"`
	Cap    *capRepair `json:"cap"`
}

// capRepair is BEN-CAP-4, as PROTO-21 writes it.
type capRepair struct {
	Status    string   `json:"status"`
	Victims   []uint64 `json:"victims"`
	Shortfall int64    `json:"shortfall"`
}

type sharedSegment struct {
	id   uint64
	size int64
}

func reject(reason string) decision { return decision{Kind: "reject", Reason: reason} }

// considerAdmission is BEN-ADMIT-1 to BEN-ADMIT-9. It returns a caller error (BEN-KEY-2) as err.
func (p *benefitPolicy) considerAdmission(key uint64, exclusiveBytes int64, shared []sharedSegment, cost costSample,
	pinned map[uint64]bool) (decision, error) {
	if !p.fitsHeldBytes(exclusiveBytes, shared) {
		return decision{}, shapeError("BEN-KEY-2: the offer would take the bytes held above 2^53")
	}
	// BEN-ADMIT-1, in this order.
	if !cost.valid() {
		return reject("invalid-cost-sample"), nil
	}
	if _, ok := p.entries[key]; ok {
		return reject("already-resident-key"), nil
	}
	seen := map[uint64]bool{}
	for _, s := range shared {
		if seen[s.id] {
			return reject("duplicate-segment-reference"), nil
		}
		seen[s.id] = true
	}
	for _, s := range shared {
		if known, ok := p.ledger[s.id]; ok && known.size != s.size {
			return reject("segment-size-conflict"), nil
		}
	}
	if cost.netBenefit() <= 0 {
		return reject("no-net-benefit"), nil // BEN-ADMIT-2: nothing has changed
	}
	p.clock++ // BEN-ADMIT-3, BEN-CLOCK-2
	p.expireGhosts()
	reason := "probation-new-entry" // BEN-ADMIT-4
	if exclusiveBytes == 0 && len(shared) == 0 {
		reason = "zero-exclusive-bytes"
	}
	e := &entry{last: cost, exclusiveBytes: exclusiveBytes, lastObservation: p.clock} // BEN-ADMIT-7
	// BEN-ADMIT-5: a ghost's statistics are taken over, and the offer counts as a reuse.
	if g, ok := p.ghosts[key]; ok {
		delete(p.ghosts, key)
		f := p.config.decayFactor
		e.hits, e.rw, e.ow = g.hits+1, float64(g.rw*f)+1, float64(g.ow*f)+1
	}
	admission := "admit-probation"
	if e.hits >= p.config.persistenceHitThreshold { // BEN-ADMIT-6
		e.admitted, admission = true, "admit-persist"
	}
	for _, s := range shared { // BEN-ADMIT-7, BEN-LEDGER-1
		e.segments = append(e.segments, s.id)
		row, ok := p.ledger[s.id]
		if !ok {
			row = &segment{size: s.size}
			p.ledger[s.id] = row
		}
		row.refs = append(row.refs, key) // the key is new, so never a reference already there
	}
	p.entries[key] = e
	repair := p.selectProbationCapVictims(pinned) // BEN-ADMIT-8
	return decision{Kind: admission, Reason: reason, Cap: &repair}, nil
}

// fitsHeldBytes is BEN-KEY-2: the bytes held after the offer, counting each segment id the
// ledger does not hold once, at its first size, stay within 2^53. Every term is below 2^63 and
// the sum stops as soon as it passes 2^53, so no uint64 sum overflows.
func (p *benefitPolicy) fitsHeldBytes(exclusiveBytes int64, shared []sharedSegment) bool {
	held := uint64(0)
	for _, e := range p.entries {
		held += uint64(e.exclusiveBytes)
	}
	for _, s := range p.ledger {
		held += uint64(s.size)
	}
	held += uint64(exclusiveBytes)
	counted := map[uint64]bool{}
	for _, s := range shared {
		if held > heldBytesMax {
			return false
		}
		if _, ok := p.ledger[s.id]; !ok && !counted[s.id] {
			counted[s.id] = true
			held += uint64(s.size)
		}
	}
	return held <= heldBytesMax
}

// recordHit is BEN-HIT-1 to BEN-HIT-3; nil is no decision.
func (p *benefitPolicy) recordHit(key uint64, cost costSample) *decision {
	if !cost.valid() {
		return nil // BEN-HIT-3: nothing at all changes
	}
	p.clock++ // BEN-CLOCK-3: resident or not
	e, ok := p.entries[key]
	if !ok {
		return nil
	}
	f := p.config.decayFactor
	e.hits++
	e.lastObservation, e.last = p.clock, cost
	e.rw, e.ow = float64(e.rw*f)+1, float64(e.ow*f)+1
	if !e.admitted && e.hits >= p.config.persistenceHitThreshold { // BEN-HIT-2
		e.admitted = true
		return &decision{Kind: "promote", Reason: "probation-second-hit"}
	}
	return nil
}

// recordMiss is BEN-MISS-1.
func (p *benefitPolicy) recordMiss(key uint64) {
	p.clock++ // BEN-CLOCK-3
	if e, ok := p.entries[key]; ok {
		e.misses++
		e.ow = float64(e.ow*p.config.decayFactor) + 1 // rw and last_observation unchanged
	}
}

// observePressure is BEN-DECAY-1 to BEN-DECAY-3. Each update reads its own weights alone, so the
// order the spec gives (entries, then ghosts, by key) cannot change a result.
func (p *benefitPolicy) observePressure(pressure float64) {
	if math.IsNaN(pressure) {
		return // BEN-DECAY-1: ignored, ghosts not expired either
	}
	pressure = math.Max(0, math.Min(1, pressure)) // +Inf counts as 1, -Inf as 0
	f := p.config.decayFactor
	rwFactor := f * (1 - pressure)
	owFactor := f + float64((1-f)*pressure)
	for _, e := range p.entries {
		e.rw, e.ow = e.rw*rwFactor, e.ow*owFactor
	}
	for _, g := range p.ghosts {
		g.rw, g.ow = g.rw*rwFactor, g.ow*owFactor
	}
	p.expireGhosts() // BEN-DECAY-3
}

// expireGhosts is BEN-GHOST-4.
func (p *benefitPolicy) expireGhosts() {
	oldest := p.clock - p.config.ghostMaxAgeObservations // no overflow: clock >= 0
	if oldest < 0 {
		oldest = 0
	}
	for key, g := range p.ghosts {
		if g.lastObservation < oldest {
			delete(p.ghosts, key)
		}
	}
}

// remove is BEN-REMOVE-1; nil when the key is not resident.
func (p *benefitPolicy) remove(key uint64, pinned map[uint64]bool) *capRepair {
	e, ok := p.entries[key]
	if !ok {
		return nil
	}
	delete(p.entries, key)
	p.recordGhost(key, e)
	for _, id := range e.segments { // BEN-LEDGER-2
		row := p.ledger[id]
		row.refs = without(row.refs, key)
		if len(row.refs) == 0 {
			delete(p.ledger, id)
		}
	}
	repair := p.selectProbationCapVictims(pinned)
	return &repair
}

// recordGhost is BEN-GHOST-1 to BEN-GHOST-3.
func (p *benefitPolicy) recordGhost(key uint64, e *entry) {
	if p.config.ghostCapacity == 0 {
		return
	}
	for int64(len(p.ghosts)) >= p.config.ghostCapacity {
		first, found := uint64(0), false // the smallest (last_observation, key)
		for k, g := range p.ghosts {
			if !found || g.lastObservation < p.ghosts[first].lastObservation ||
				(g.lastObservation == p.ghosts[first].lastObservation && k < first) {
				first, found = k, true
			}
		}
		delete(p.ghosts, first)
	}
	p.ghosts[key] = &ghost{hits: e.hits, rw: e.rw, ow: e.ow, lastObservation: p.clock}
}

func without(keys []uint64, key uint64) []uint64 {
	out := keys[:0]
	for _, k := range keys {
		if k != key {
			out = append(out, k)
		}
	}
	return out
}

// sortedKeys are the entries' keys, ascending (BEN-ENTRY-3).
func (p *benefitPolicy) sortedKeys() []uint64 {
	keys := make([]uint64, 0, len(p.entries))
	for k := range p.entries {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

// references counts a segment's references: the live ledger's, or a scratch copy's (BEN-CAP-3).
type references func(id uint64) int

func (p *benefitPolicy) liveReferences(id uint64) int { return len(p.ledger[id].refs) }

// fractionalBytes is BEN-LEDGER-3: size / N summed over the entry's segments in the order
// offered, no rounding per term.
func (p *benefitPolicy) fractionalBytes(e *entry, refs references) float64 {
	total := 0.0
	for _, id := range e.segments {
		total += float64(p.ledger[id].size) / float64(refs(id))
	}
	return total
}

// charge is the probation charge of BEN-LEDGER-5 over the probation entries not in skip: one
// ceiling, after the sum in ascending key order. Its value is at most about 2^53 (BEN-KEY-2).
func (p *benefitPolicy) charge(refs references, skip map[uint64]bool) int64 {
	total := 0.0
	for _, key := range p.sortedKeys() {
		e := p.entries[key]
		if !e.admitted && !skip[key] {
			total += float64(e.exclusiveBytes) + p.fractionalBytes(e, refs)
		}
	}
	return int64(math.Ceil(total))
}

// score is BEN-SCORE-1 to BEN-SCORE-5; ok is false where the entry has none.
func (p *benefitPolicy) score(e *entry) (float64, bool) {
	if !e.last.valid() {
		return 0, false // BEN-SCORE-1
	}
	reuseProbability := 0.0 // BEN-ENTRY-2
	if e.ow > 0 {
		reuseProbability = math.Max(0, math.Min(1, e.rw/e.ow))
	}
	reuse := reuseProbability // BEN-SCORE-2
	if p.config.minReuseProbability > reuseProbability {
		reuse = p.config.minReuseProbability
	}
	bytes := float64(e.exclusiveBytes) + p.fractionalBytes(e, p.liveReferences) // BEN-SCORE-3
	if bytes <= 0 {
		return 0, false
	}
	s := reuse * e.last.netBenefit() / bytes // BEN-SCORE-4, left to right
	if math.IsNaN(s) || math.IsInf(s, 0) {
		return 0, false
	}
	return s, true
}

// byAge orders keys by (last_observation, key) (BEN-CAP-2, BEN-VICTIM-2).
func (p *benefitPolicy) byAge(keys []uint64) {
	sort.Slice(keys, func(i, j int) bool {
		a, b := p.entries[keys[i]], p.entries[keys[j]]
		if a.lastObservation != b.lastObservation {
			return a.lastObservation < b.lastObservation
		}
		return keys[i] < keys[j]
	})
}

// probationByHits is the unpinned probation entries with 0 hits (first) and with hits (second).
func (p *benefitPolicy) probationByHits(pinned map[uint64]bool) (cold, warm []uint64) {
	for key, e := range p.entries {
		switch {
		case e.admitted || pinned[key]:
		case e.hits == 0:
			cold = append(cold, key)
		default:
			warm = append(warm, key)
		}
	}
	p.byAge(cold)
	p.byAge(warm)
	return cold, warm
}

// selectProbationCapVictims is BEN-CAP-1 to BEN-CAP-5: selection only.
func (p *benefitPolicy) selectProbationCapVictims(pinned map[uint64]bool) capRepair {
	budget := p.config.probationByteBudget
	victims := []uint64{}
	chosen := map[uint64]bool{}
	charge := p.charge(p.liveReferences, chosen)
	if charge > budget {
		released := map[uint64]int{} // the scratch ledger: references released per segment
		scratch := func(id uint64) int { return len(p.ledger[id].refs) - released[id] }
		cold, warm := p.probationByHits(pinned)
		for _, key := range append(cold, warm...) {
			for _, id := range p.entries[key].segments {
				released[id]++
			}
			victims = append(victims, key)
			chosen[key] = true
			if charge = p.charge(scratch, chosen); charge <= budget {
				break
			}
		}
	}
	if charge <= budget {
		return capRepair{Status: "satisfied", Victims: victims}
	}
	return capRepair{Status: "deferred", Victims: victims, Shortfall: charge - budget}
}

// inGrace is BEN-GRACE-1.
func (p *benefitPolicy) inGrace(e *entry) bool {
	age := p.clock - e.lastObservation
	if age < 0 {
		age = 0
	}
	return age < p.config.graceObservations
}

// chooseVictims is BEN-VICTIM-1 to BEN-VICTIM-5: selection only; the victims and the bytes
// they would release.
func (p *benefitPolicy) chooseVictims(bytesToFree int64, pinned map[uint64]bool) ([]uint64, int64) {
	victims, freed := []uint64{}, int64(0)
	if bytesToFree == 0 {
		return victims, freed // BEN-VICTIM-1
	}
	order, listed := p.victimOrder(pinned), map[uint64]bool{}
	for _, honourGrace := range []bool{true, false} { // BEN-VICTIM-3
		for _, key := range order {
			if freed >= bytesToFree {
				return victims, freed
			}
			e := p.entries[key]
			if listed[key] || (honourGrace && p.inGrace(e)) {
				continue
			}
			listed[key] = true
			victims = append(victims, key)
			freed += p.released(e, listed)
		}
	}
	return victims, freed
}

// victimOrder is BEN-VICTIM-2: the unpinned probation entries without hits by age, then the
// unpinned entries that have a score by (score, key), each key once.
func (p *benefitPolicy) victimOrder(pinned map[uint64]bool) []uint64 {
	order, _ := p.probationByHits(pinned)
	first := map[uint64]bool{}
	for _, key := range order {
		first[key] = true
	}
	type scored struct {
		key   uint64
		score float64
	}
	var rest []scored
	for key, e := range p.entries {
		if s, ok := p.score(e); ok && !pinned[key] && !first[key] {
			rest = append(rest, scored{key, s})
		}
	}
	sort.Slice(rest, func(i, j int) bool {
		if rest[i].score != rest[j].score {
			return rest[i].score < rest[j].score
		}
		return rest[i].key < rest[j].key
	})
	for _, s := range rest {
		order = append(order, s.key)
	}
	return order
}

// released is what one more victim adds to freed (BEN-VICTIM-4): its exclusive bytes, and the
// full size of each of its segments whose references are now all victims.
func (p *benefitPolicy) released(e *entry, victims map[uint64]bool) int64 {
	bytes := e.exclusiveBytes
	for _, id := range e.segments {
		all := true
		for _, ref := range p.ledger[id].refs {
			all = all && victims[ref]
		}
		if all {
			bytes += p.ledger[id].size
		}
	}
	return bytes
}
