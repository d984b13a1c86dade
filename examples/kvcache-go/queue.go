package main

import "container/list"

// queue is REPLAY-QUEUE-1 to REPLAY-QUEUE-3: distinct block hashes, each with the value its policy
// keeps beside it (a freq for S3FIFO's S and M, unused elsewhere), head appended longest ago.
// A linked list keeps the order; a map finds a hash's place in it in O(1).
type queue struct {
	order *list.List // of *slot, head at Front
	index map[int64]*list.Element
}

type slot struct {
	hash int64
	freq int64
}

func newQueue() *queue {
	return &queue{order: list.New(), index: make(map[int64]*list.Element)}
}

func (q *queue) len() int64 { return int64(q.order.Len()) }

func (q *queue) has(h int64) bool {
	_, ok := q.index[h]
	return ok
}

// slotOf is the entry of h, to read or change its freq in place, or nil.
func (q *queue) slotOf(h int64) *slot {
	e, ok := q.index[h]
	if !ok {
		return nil
	}
	return e.Value.(*slot)
}

// push appends at the tail (REPLAY-QUEUE-1); h must not be in the queue.
func (q *queue) push(h, freq int64) {
	q.index[h] = q.order.PushBack(&slot{hash: h, freq: freq})
}

// popHead is REPLAY-QUEUE-2; the queue must not be empty.
func (q *queue) popHead() slot {
	s := q.order.Remove(q.order.Front()).(*slot)
	delete(q.index, s.hash)
	return *s
}

func (q *queue) remove(h int64) {
	if e, ok := q.index[h]; ok {
		q.order.Remove(e)
		delete(q.index, h)
	}
}

// requeue is REPLAY-QUEUE-3: h moves to the tail.
func (q *queue) requeue(h int64) {
	q.order.MoveToBack(q.index[h])
}

// pairs is the queue head first as [hash, freq] pairs, never nil (a nil slice would be written
// as JSON null, and the snapshot's schema wants an array).
func (q *queue) pairs(withFreq bool) [][2]int64 {
	out := make([][2]int64, 0, q.order.Len())
	for e := q.order.Front(); e != nil; e = e.Next() {
		s := e.Value.(*slot)
		f := int64(0)
		if withFreq {
			f = s.freq
		}
		out = append(out, [2]int64{s.hash, f})
	}
	return out
}

func (q *queue) hashes() []int64 {
	out := make([]int64, 0, q.order.Len())
	for e := q.order.Front(); e != nil; e = e.Next() {
		out = append(out, e.Value.(*slot).hash)
	}
	return out
}
