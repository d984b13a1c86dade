package main

// S3FIFO (spec/s3fifo.md), LRU (spec/lru.md), FIFO (spec/fifo.md) and the longest-prefix hit
// count of spec/replay.md, over block hashes that are signed 64-bit integers.

import (
	"fmt"
	"math"
)

// blockCache is REPLAY-POLICY-1, with the snapshot of PROTO-12.
type blockCache interface {
	resident(h int64) bool // must not change the cache
	access(h int64)
	residentCount() int64
	snapshot() (small, main [][2]int64, ghost []int64)
}

// refusal is a configuration a clause refuses (PROTO-8); its text starts with the clause.
type refusal struct{ clause, why string }

func (r refusal) Error() string { return r.clause + ": " + r.why }

func refuse(clause, format string, args ...interface{}) error {
	return refusal{clause, fmt.Sprintf(format, args...)}
}

// configCount reads a configuration integer in [lo, 2^63 - 1]; any other value, or a value of
// another JSON type (4.0, "4", true, null), is refused by the clause.
func configCount(cfg fields, name string, lo int64, clause string) (int64, error) {
	v, ok := asInt(cfg[name], lo, math.MaxInt64)
	if !ok {
		return 0, refuse(clause, "%s must be an integer in [%d, 2^63 - 1], not %s", name, lo, shown(cfg[name]))
	}
	return v, nil
}

// newBlockCache builds an empty cache for the configuration of PROTO-7, or refuses it
// (REPLAY-CONF-1 to REPLAY-CONF-3, S3-CONF-1 to S3-CONF-6). It returns the block size too.
func newBlockCache(cfg fields) (blockCache, int64, error) {
	policy, _ := asString(cfg["policy"])
	if policy != "s3fifo" && policy != "lru" && policy != "fifo" {
		return nil, 0, refuse("REPLAY-CONF-3", "policy must be s3fifo, lru or fifo, not %s", shown(cfg["policy"]))
	}
	capacity, err := configCount(cfg, "capacity", 1, "REPLAY-CONF-1")
	if err != nil {
		return nil, 0, err
	}
	blockSize, err := configCount(cfg, "block_size", 1, "REPLAY-CONF-2")
	if err != nil {
		return nil, 0, err
	}
	switch policy {
	case "lru":
		return &lru{capacity: capacity, recency: newQueue()}, blockSize, nil
	case "fifo":
		return &fifo{capacity: capacity, arrival: newQueue()}, blockSize, nil
	}
	c, err := newS3FIFO(cfg, capacity)
	return c, blockSize, err
}

// newS3FIFO checks S3FIFO's own knobs; the other policies ignore them (REPLAY-CONF-3).
func newS3FIFO(cfg fields, capacity int64) (*s3fifo, error) {
	smallRatio := 0.1 // S3-CONF-1's default, for a configuration without the field
	if raw, sent := cfg["small_ratio"]; sent {
		// S3-CONF-1: a finite double in [0, 1]. The schema's "number" lets 1 stand for 1.0.
		v, ok := asDouble(raw)
		if !ok || math.IsNaN(v) || v < 0 || v > 1 {
			return nil, refuse("S3-CONF-1", "small_ratio must be a finite double in [0, 1], not %s", shown(raw))
		}
		smallRatio = v
	}
	maxFreq := int64(3) // S3-CONF-6's default
	if _, sent := cfg["max_freq"]; sent {
		var err error
		if maxFreq, err = configCount(cfg, "max_freq", 0, "S3-CONF-6"); err != nil {
			return nil, err
		}
	}
	// S3-CONF-2: the IEEE-754 product (float64(capacity) rounds to nearest even, as Python's
	// int * float does), then the nearest integer with a tie to the even one: math.RoundToEven,
	// not math.Round, which sends 2.5 to 3. The product can be 2^63, which no int64 holds.
	rounded := math.RoundToEven(float64(capacity) * smallRatio)
	if rounded >= math.Exp2(63) {
		return nil, refuse("S3-CONF-5", "capacity %d at small_ratio %v gives small_cap = 2^63 > capacity", capacity, smallRatio)
	}
	smallCap := int64(rounded)
	mainCap := capacity - smallCap // S3-CONF-3
	if smallCap < 1 || mainCap < 1 {
		return nil, refuse("S3-CONF-5", "capacity %d at small_ratio %v gives small_cap %d and main_cap %d; both must be at least 1",
			capacity, smallRatio, smallCap, mainCap)
	}
	return &s3fifo{
		smallCap: smallCap, mainCap: mainCap, ghostCap: mainCap, // S3-CONF-4: ghost_cap = main_cap
		maxFreq: maxFreq, small: newQueue(), main: newQueue(), ghost: newQueue(),
	}, nil
}

type s3fifo struct {
	smallCap, mainCap, ghostCap, maxFreq int64
	small, main, ghost                   *queue // S3-QUEUE-1; the ghost's freqs are unused
}

// resident is S3-QUEUE-3: S or M, never G.
func (c *s3fifo) resident(h int64) bool { return c.small.has(h) || c.main.has(h) }

// access applies exactly one of S3-ACCESS-1 to S3-ACCESS-4.
func (c *s3fifo) access(h int64) {
	if s := c.small.slotOf(h); s != nil {
		s.freq = c.incremented(s.freq) // S3-ACCESS-1: in place
		return
	}
	if s := c.main.slotOf(h); s != nil {
		s.freq = c.incremented(s.freq) // S3-ACCESS-2: in place
		return
	}
	if c.ghost.has(h) {
		c.ghost.remove(h) // S3-ACCESS-3
		c.admitToMain(h, 0)
		return
	}
	c.admitToSmall(h) // S3-ACCESS-4
}

// incremented is S3-FREQ-2: one more, saturating at max_freq.
func (c *s3fifo) incremented(freq int64) int64 {
	if freq < c.maxFreq {
		return freq + 1
	}
	return c.maxFreq
}

// admitToSmall is S3-ADMIT-S-1 to S3-ADMIT-S-4.
func (c *s3fifo) admitToSmall(h int64) {
	for c.small.len() >= c.smallCap {
		head := c.small.popHead()
		if head.freq >= 1 {
			c.admitToMain(head.hash, head.freq) // S3-ADMIT-S-2: its freq kept
		} else {
			c.insertGhost(head.hash) // S3-ADMIT-S-3
		}
	}
	c.small.push(h, 0) // S3-ADMIT-S-4
}

// admitToMain is S3-ADMIT-M-1 to S3-ADMIT-M-4: second chances, then one eviction at most.
func (c *s3fifo) admitToMain(h, freq int64) {
	for c.main.len() >= c.mainCap {
		head := c.main.popHead()
		if head.freq >= 1 {
			c.main.push(head.hash, head.freq-1) // S3-ADMIT-M-2: back at the tail
			continue
		}
		c.insertGhost(head.hash) // S3-ADMIT-M-3
		break
	}
	c.main.push(h, freq) // S3-ADMIT-M-4
}

// insertGhost is S3-GHOST-1 to S3-GHOST-3.
func (c *s3fifo) insertGhost(h int64) {
	if c.ghost.has(h) {
		c.ghost.remove(h) // S3-GHOST-1
	} else if c.ghost.len() >= c.ghostCap {
		c.ghost.popHead() // S3-GHOST-2
	}
	c.ghost.push(h, 0) // S3-GHOST-3
}

// residentCount is S3-FINAL-1: the ghost never counts.
func (c *s3fifo) residentCount() int64 { return c.small.len() + c.main.len() }

func (c *s3fifo) snapshot() ([][2]int64, [][2]int64, []int64) {
	return c.small.pairs(true), c.main.pairs(true), c.ghost.hashes()
}

// lru is LRU-CAP-1 to LRU-ADMIT-1.
type lru struct {
	capacity int64
	recency  *queue // head: least recently accessed
}

func (c *lru) resident(h int64) bool { return c.recency.has(h) }

func (c *lru) access(h int64) {
	if c.recency.has(h) {
		c.recency.requeue(h) // LRU-ACCESS-1
		return
	}
	if c.recency.len() >= c.capacity {
		c.recency.popHead() // LRU-EVICT-1
	}
	c.recency.push(h, 0) // LRU-ADMIT-1
}

func (c *lru) residentCount() int64 { return c.recency.len() }

func (c *lru) snapshot() ([][2]int64, [][2]int64, []int64) {
	return [][2]int64{}, c.recency.pairs(false), []int64{}
}

// fifo is FIFO-CAP-1 to FIFO-ADMIT-1.
type fifo struct {
	capacity int64
	arrival  *queue // head: admitted first
}

func (c *fifo) resident(h int64) bool { return c.arrival.has(h) }

func (c *fifo) access(h int64) {
	if c.arrival.has(h) {
		return // FIFO-ACCESS-1
	}
	if c.arrival.len() >= c.capacity {
		c.arrival.popHead() // FIFO-EVICT-1
	}
	c.arrival.push(h, 0) // FIFO-ADMIT-1
}

func (c *fifo) residentCount() int64 { return c.arrival.len() }

func (c *fifo) snapshot() ([][2]int64, [][2]int64, []int64) {
	return [][2]int64{}, c.arrival.pairs(false), []int64{}
}

// hitTokens is REPLAY-PREFIX-1 to REPLAY-HIT-1: min(k x block_size, input_length) for the longest
// resident prefix k, found without changing the cache. k x block_size can pass 2^63 - 1 (a block
// size near 2^63 and two hits): it is compared through a division, never computed when too large.
func hitTokens(c blockCache, hashIDs []int64, inputLength, blockSize int64) int64 {
	k := int64(0)
	for _, h := range hashIDs {
		if !c.resident(h) {
			break // REPLAY-PREFIX-2: blocks after the first miss do not count
		}
		k++
	}
	if k == 0 {
		return 0
	}
	if blockSize > inputLength/k { // k x block_size > input_length
		return inputLength
	}
	return k * blockSize
}
