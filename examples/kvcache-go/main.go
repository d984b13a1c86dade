// Command kvcache-go speaks the kvspec adapter protocol, version 1 (spec/adapter-protocol.md):
// one JSON request a line on stdin, one JSON reply a line on stdout, flushed after each, for
// S3FIFO, LRU, FIFO and the benefit policy. Standard library only. See README.md.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
)

type identity struct {
	Name     string `json:"name"`
	Language string `json:"language"`
	Version  string `json:"version"`
}

var implementation = identity{"kvspec-kvcache-go", "go", "0.1.0"}

// server is the one cache or policy a configure built (PROTO-7, PROTO-20); nil before the first,
// and after a refused one.
type server struct {
	cache     blockCache
	blockSize int64
	benefit   *benefitPolicy
}

func main() {
	in := bufio.NewReader(os.Stdin) // ReadBytes has no line limit; bufio.Scanner stops at 64 KiB
	out := bufio.NewWriter(os.Stdout)
	s := &server{}
	for expected := int64(0); ; {
		line, err := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 { // a blank line is no request
			reply, stop := s.answer(line, expected)
			if stop {
				break // PROTO-13: no reply
			}
			expected++
			out.Write(reply)
			out.WriteByte('\n')
			if out.Flush() != nil { // PROTO-1: every reply leaves at once, or kvspec waits for it
				os.Exit(1)
			}
		}
		if err == io.EOF {
			break // the end of stdin is taken as stop (PROTO-13)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "kvcache-go: reading stdin:", err)
			os.Exit(1)
		}
	}
	out.Flush()
	os.Exit(0) // os.Exit runs no deferred calls: everything is flushed above
}

// answer is the reply line to one request line, or stop. A request it cannot serve gets an error
// reply (PROTO-14), with its seq when it has one (the number of requests before it otherwise);
// a panic too, rather than a dead process.
func (s *server) answer(line []byte, expected int64) (reply []byte, stop bool) {
	seq := expected
	defer func() {
		if p := recover(); p != nil {
			reply = encode(errorReply{seq, fmt.Sprintf("internal error: %v", p)})
		}
	}()
	var req fields
	if err := json.Unmarshal(line, &req); err != nil {
		return encode(errorReply{seq, "PROTO-1: not a JSON object: " + err.Error()}), false
	}
	if n, ok := asInt(req["seq"], 0, 1<<63-1); ok {
		seq = n
	}
	cmd, _ := asString(req["cmd"])
	if cmd == "stop" {
		return nil, true
	}
	body, err := s.handle(cmd, req, seq)
	if err != nil {
		return encode(errorReply{seq, err.Error()}), false
	}
	return encode(body), false
}

func encode(v interface{}) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Replies: encoding/json writes int64 and uint64 exactly, and a struct's fields in order.
type errorReply struct {
	Seq   int64  `json:"seq"`
	Error string `json:"error"`
}

type okReply struct {
	Seq int64 `json:"seq"`
	OK  bool  `json:"ok"`
}

type refusedReply struct {
	Seq     int64  `json:"seq"`
	OK      bool   `json:"ok"`
	Refused string `json:"refused"`
}

type startReply struct {
	Seq            int64    `json:"seq"`
	Protocol       int      `json:"protocol"`
	Implementation identity `json:"implementation"`
	Level          string   `json:"level"`
	Policies       []string `json:"policies"`
}

type hitTokensReply struct {
	Seq       int64 `json:"seq"`
	HitTokens int64 `json:"hit_tokens"`
}

type residentCountReply struct {
	Seq           int64 `json:"seq"`
	ResidentCount int64 `json:"resident_count"`
}

type snapshotReply struct {
	Seq   int64      `json:"seq"`
	Small [][2]int64 `json:"small"`
	Main  [][2]int64 `json:"main"`
	Ghost []int64    `json:"ghost"`
}

type decisionReply struct {
	Seq      int64     `json:"seq"`
	Decision *decision `json:"decision"`
}

type victimsReply struct {
	Seq   int64    `json:"seq"`
	Keys  []uint64 `json:"keys"`
	Freed int64    `json:"freed"`
}

type capReply struct {
	Seq int64      `json:"seq"`
	Cap *capRepair `json:"cap"`
}

type entryState struct {
	Key             uint64  `json:"key"`
	State           string  `json:"state"`
	Hits            int64   `json:"hits"`
	Misses          int64   `json:"misses"`
	RW              double  `json:"rw"`
	OW              double  `json:"ow"`
	LastObservation int64   `json:"last_observation"`
	Score           *double `json:"score"`
}

type ghostState struct {
	Key             uint64 `json:"key"`
	Hits            int64  `json:"hits"`
	RW              double `json:"rw"`
	OW              double `json:"ow"`
	LastObservation int64  `json:"last_observation"`
}

type benefitStateReply struct {
	Seq             int64        `json:"seq"`
	Clock           int64        `json:"clock"`
	Entries         []entryState `json:"entries"`
	Ghosts          []ghostState `json:"ghosts"`
	ProbationCharge int64        `json:"probation_charge"`
}

// handle answers one request but stop (PROTO-5 to PROTO-12, PROTO-20 to PROTO-28).
func (s *server) handle(cmd string, req fields, seq int64) (interface{}, error) {
	switch cmd {
	case "start": // PROTO-5, PROTO-6
		return startReply{seq, 1, implementation, "state", []string{"s3fifo", "lru", "fifo", "benefit"}}, nil
	case "configure": // PROTO-7, PROTO-8
		cfg, err := req.object("config")
		if err != nil {
			return nil, err
		}
		*s = server{} // any earlier cache or policy is gone, refused or not
		cache, blockSize, err := newBlockCache(cfg)
		if err != nil {
			return refusedReply{seq, false, err.Error()}, nil
		}
		s.cache, s.blockSize = cache, blockSize
		return okReply{seq, true}, nil
	case "configure_benefit": // PROTO-20
		cfg, err := req.object("config")
		if err != nil {
			return nil, err
		}
		*s = server{}
		config, err := newBenefitConfig(cfg)
		if err != nil {
			return refusedReply{seq, false, err.Error()}, nil
		}
		s.benefit = newBenefitPolicy(config)
		return okReply{seq, true}, nil
	case "hit_tokens", "access", "resident_count", "snapshot":
		return s.handleBlocks(cmd, req, seq)
	case "consider_admission", "record_hit", "record_miss", "observe_pressure", "choose_victims",
		"select_probation_cap_victims", "remove", "benefit_state":
		return s.handleBenefit(cmd, req, seq)
	}
	return nil, fmt.Errorf("PROTO-16: unknown cmd %s", shown(req["cmd"]))
}

// handleBlocks is PROTO-9 to PROTO-12.
func (s *server) handleBlocks(cmd string, req fields, seq int64) (interface{}, error) {
	if s.cache == nil {
		return nil, fmt.Errorf("%s: no block cache; send a configure that is accepted first", cmd)
	}
	switch cmd {
	case "hit_tokens":
		ids, err := req.hashIDs("hash_ids")
		if err != nil {
			return nil, err
		}
		inputLength, err := req.count("input_length", 1)
		if err != nil {
			return nil, err
		}
		return hitTokensReply{seq, hitTokens(s.cache, ids, inputLength, s.blockSize)}, nil
	case "access":
		ids, err := req.hashIDs("hash_ids") // all read before the first is accessed
		if err != nil {
			return nil, err
		}
		for _, h := range ids {
			s.cache.access(h) // REPLAY-ACCESS-1: every block, hit or miss, in order
		}
		return okReply{seq, true}, nil
	case "resident_count":
		return residentCountReply{seq, s.cache.residentCount()}, nil
	}
	small, main, ghost := s.cache.snapshot()
	return snapshotReply{seq, small, main, ghost}, nil
}

// handleBenefit is PROTO-21 to PROTO-28. Every field is read before the policy is touched, so
// that a request of the wrong shape changes nothing (BEN-KEY-1).
func (s *server) handleBenefit(cmd string, req fields, seq int64) (interface{}, error) {
	p := s.benefit
	if p == nil {
		return nil, fmt.Errorf("%s: no benefit policy; send a configure_benefit that is accepted first", cmd)
	}
	switch cmd {
	case "consider_admission":
		key, err := req.key("key")
		exclusive, err2 := req.count("exclusive_bytes", 0)
		shared, err3 := sharedSegments(req)
		cost, err4 := costOf(req)
		pinned, err5 := req.keySet("pinned")
		if err := firstError(err, err2, err3, err4, err5); err != nil {
			return nil, err
		}
		d, err := p.considerAdmission(key, exclusive, shared, cost, pinned)
		if err != nil {
			return nil, err
		}
		return decisionReply{seq, &d}, nil
	case "record_hit":
		key, err := req.key("key")
		cost, err2 := costOf(req)
		if err := firstError(err, err2); err != nil {
			return nil, err
		}
		return decisionReply{seq, p.recordHit(key, cost)}, nil
	case "record_miss":
		key, err := req.key("key")
		if err != nil {
			return nil, err
		}
		p.recordMiss(key)
		return okReply{seq, true}, nil
	case "observe_pressure":
		pressure, err := req.double("pressure")
		if err != nil {
			return nil, err
		}
		p.observePressure(pressure)
		return okReply{seq, true}, nil
	case "choose_victims":
		bytesToFree, err := req.count("bytes_to_free", 0)
		pinned, err2 := req.keySet("pinned")
		if err := firstError(err, err2); err != nil {
			return nil, err
		}
		keys, freed := p.chooseVictims(bytesToFree, pinned)
		return victimsReply{seq, keys, freed}, nil
	case "select_probation_cap_victims":
		pinned, err := req.keySet("pinned")
		if err != nil {
			return nil, err
		}
		repair := p.selectProbationCapVictims(pinned)
		return capReply{seq, &repair}, nil
	case "remove":
		key, err := req.key("key")
		pinned, err2 := req.keySet("pinned")
		if err := firstError(err, err2); err != nil {
			return nil, err
		}
		return capReply{seq, p.remove(key, pinned)}, nil
	}
	return benefitState(p, seq), nil
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// sharedSegments reads consider_admission's shared list: [id, size] pairs, as sent, repeated ids
// and conflicting sizes included (PROTO-21).
func sharedSegments(req fields) ([]sharedSegment, error) {
	items, ok := asArray(req["shared"])
	if !ok {
		return nil, shapeError("shared must be an array of [segment id, size] pairs, not %s", shown(req["shared"]))
	}
	out := make([]sharedSegment, len(items))
	for i, item := range items {
		pair, ok := asArray(item)
		if ok && len(pair) == 2 {
			out[i].id, ok = asKey(pair[0])
			if ok {
				out[i].size, ok = asInt(pair[1], 0, 1<<63-1)
			}
		}
		if !ok || len(pair) != 2 {
			return nil, shapeError("shared[%d] must be [segment id in [0, 2^64 - 1], size in [0, 2^63 - 1]], not %s", i, shown(item))
		}
	}
	return out, nil
}

// costOf reads a cost sample (BEN-COST-1); invalid samples travel too.
func costOf(req fields) (costSample, error) {
	cost, err := req.object("cost")
	if err != nil {
		return costSample{}, err
	}
	cold, err := cost.double("cold_prefill_cost")
	restore, err2 := cost.double("restore_cost")
	return costSample{cold, restore}, firstError(err, err2)
}

// benefitState is PROTO-28: entries and ghosts in ascending key order.
func benefitState(p *benefitPolicy, seq int64) benefitStateReply {
	reply := benefitStateReply{Seq: seq, Clock: p.clock, Entries: []entryState{}, Ghosts: []ghostState{},
		ProbationCharge: p.charge(p.liveReferences, nil)}
	for _, key := range p.sortedKeys() {
		e := p.entries[key]
		state := "probation"
		if e.admitted {
			state = "admitted"
		}
		es := entryState{key, state, e.hits, e.misses, double(e.rw), double(e.ow), e.lastObservation, nil}
		if score, ok := p.score(e); ok {
			d := double(score)
			es.Score = &d
		}
		reply.Entries = append(reply.Entries, es)
	}
	ghostKeys := make([]uint64, 0, len(p.ghosts))
	for key := range p.ghosts {
		ghostKeys = append(ghostKeys, key)
	}
	sort.Slice(ghostKeys, func(i, j int) bool { return ghostKeys[i] < ghostKeys[j] })
	for _, key := range ghostKeys {
		g := p.ghosts[key]
		reply.Ghosts = append(reply.Ghosts, ghostState{key, g.hits, double(g.rw), double(g.ow), g.lastObservation})
	}
	return reply
}
