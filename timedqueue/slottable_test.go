package timedqueue

import "testing"

// TestSlotTable: slots added one by one keep their numbers and values as the table grows,
// those of a full page their addresses too, and the room allocated but unused is never more than one page.
func TestSlotTable(t *testing.T) {
	var tab slotTable[int, int]
	const n = 5*pageSlots + 3
	var first *slot[int, int]
	for i := range n {
		if got := tab.add(); got != int32(i) {
			t.Fatalf("add %d: got slot %d", i, got)
		}
		tab.at(int32(i)).key = i
		if i == pageSlots-1 {
			first = tab.at(0) // the first page is full now
		}
		if i >= pageSlots && tab.at(0) != first {
			t.Fatalf("after %d adds, slot 0 of a full page moved", i+1)
		}
		if room := tabCap(&tab) - tab.len(); room > pageSlots {
			t.Fatalf("after %d adds: %d slots of room, more than a page (%d)", i+1, room, pageSlots)
		}
	}
	if got := tab.len(); got != n {
		t.Fatalf("len: got %d, want %d", got, n)
	}
	for i := range n {
		if got := tab.at(int32(i)).key; got != i {
			t.Fatalf("slot %d: got key %d, want %d", i, got, i)
		}
	}
	for i, p := range tab.pages[:len(tab.pages)-1] {
		if len(p) != pageSlots || cap(p) != pageSlots {
			t.Errorf("page %d: len %d, cap %d; want %d, %d", i, len(p), cap(p), pageSlots, pageSlots)
		}
	}
}

func tabCap[K comparable, V any](t *slotTable[K, V]) int {
	c := 0
	for _, p := range t.pages {
		c += cap(p)
	}
	return c
}
