package emu

// fifo is a first-in first-out queue on a ring buffer that grows by doubling.
// The zero value is an empty queue. It is not safe for concurrent use.
type fifo[T any] struct {
	buf  []T
	head int // index of the first element
	n    int // number of elements
}

// Len returns the number of elements in q.
func (q *fifo[T]) Len() int { return q.n }

// Push appends v at the tail.
func (q *fifo[T]) Push(v T) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = v
	q.n++
}

// Front returns a pointer to the first element. It panics if q is empty.
func (q *fifo[T]) Front() *T {
	if q.n == 0 {
		panic("emu: Front of an empty fifo")
	}
	return &q.buf[q.head]
}

// At returns a pointer to the i-th element from the front. It panics if i
// is out of range.
func (q *fifo[T]) At(i int) *T {
	if i < 0 || i >= q.n {
		panic("emu: fifo index out of range")
	}
	return &q.buf[(q.head+i)&(len(q.buf)-1)]
}

// Pop removes and returns the first element. It panics if q is empty.
func (q *fifo[T]) Pop() T {
	if q.n == 0 {
		panic("emu: Pop of an empty fifo")
	}
	var zero T
	v := q.buf[q.head]
	q.buf[q.head] = zero
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return v
}

func (q *fifo[T]) grow() {
	size := 2 * len(q.buf)
	if size == 0 {
		size = 16
	}
	buf := make([]T, size)
	for i := 0; i < q.n; i++ {
		buf[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
	}
	q.buf, q.head = buf, 0
}
