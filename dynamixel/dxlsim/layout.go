package dxlsim

import "github.com/labbridge/bridge/dynamixel"

// tableSize covers the XM430-W210 control table through Indirect Data 56
// (address 661).
const tableSize = 662

// Indirect addresses and data (eManual "Indirect Address"): two banks of 28.
// Each Indirect Address n holds the RAM address that Indirect Data n stands
// for; the factory value points Data n at itself.
const (
	indirectBanks     = 2
	indirectPerBank   = 28
	indirectTargetMin = 64 // RAM only: EEPROM cannot be mapped
	indirectTargetMax = tableSize - 1
)

// item is one control-table entry as the simulator serves it.
type item struct {
	dynamixel.Item
	// indirect is, for Indirect Data n, the address of Indirect Address n.
	indirect uint16
}

// layout maps every address to the item that covers it. It is built once per
// Servo and never changed, so servos of one bus can share it.
type layout struct {
	items []item
	// at holds 1 + the index of the item covering each address; 0 is none.
	at [tableSize]uint8
}

func newLayout(m *dynamixel.Model) *layout {
	l := &layout{}
	add := func(it item) {
		end := int(it.Addr) + int(it.Size)
		if it.Size == 0 || end > tableSize || len(l.items) >= 255 {
			return
		}
		l.items = append(l.items, it)
		for a := int(it.Addr); a < end; a++ {
			l.at[a] = uint8(len(l.items))
		}
	}
	for _, it := range m.Items() {
		add(item{Item: it})
	}
	// Indirect Address 1 and 29 are at 168 and 578, Indirect Data 1 and 29
	// at 224 and 634.
	for _, bank := range [indirectBanks]struct{ addr, data uint16 }{{168, 224}, {578, 634}} {
		for n := range uint16(indirectPerBank) {
			add(item{Item: dynamixel.Item{Name: "IndirectAddress", Addr: bank.addr + 2*n, Size: 2, Writable: true,
				Min: indirectTargetMin, Max: indirectTargetMax, Default: int64(bank.data + n)}})
			add(item{Item: dynamixel.Item{Name: "IndirectData", Addr: bank.data + n, Size: 1, Writable: true, Max: 255},
				indirect: bank.addr + 2*n})
		}
	}
	return l
}

// lookup returns the index of the item covering addr, or -1.
func (l *layout) lookup(addr int) int {
	if addr < 0 || addr >= tableSize {
		return -1
	}
	return int(l.at[addr]) - 1
}
