// Package report reads the per-link CSV files of a recording made by
// `bridge record` (docs/tap.md §5), computes each link's timing and loss
// statistics, and renders them as one self-contained HTML page.
//
// The page carries everything it shows: the plots are SVG written inline,
// the one font their text is measured with is embedded once, and nothing is
// fetched from the network, so the file can be mailed, archived or opened on
// a lab PC offline.
//
// The plots are made with gonum.org/v1/plot (vg/vgsvg for the SVG): a
// well-kept plotting library, with axes, tick placement, text measurement and
// clipping already right and tested, rather than drawing by hand. The few
// plotters it lacks (a line broken where data is missing, status bands,
// histogram bars on a log scale) are small plot.Plotter implementations
// here. Long signals are down-sampled to the minimum and maximum of each
// pixel column before plotting, so a ten-minute recording at 1 kHz makes a
// page of a few hundred kB per link, and a spike shorter than a pixel is
// still drawn.
//
// The package imports nothing else of the module: the status and state names
// are those of docs/tap.md §5, written here.
package report
