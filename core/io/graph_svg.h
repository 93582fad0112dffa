/* graph_svg.h - the network drawn as a graph (akkctl check --graph).
 *
 * akk_graph_layout flattens a planned model into vertices and edges: the
 * input, every layer (a graph layer's nodes and joins, a residual block's
 * inner chain, shortcut chain and the add that joins them, each in place
 * of the composite), the loss; an edge for every value a vertex reads.
 * It lays them out top to bottom: a vertex's row is the longest path
 * from the input; its lane (column) is the one its first input's edge
 * arrives in. An edge keeps the lanes it passes through to itself: a
 * vertex's first edge out stays in the vertex's lane when it can, every
 * other one takes the nearest lane to the right that is free from the
 * row below its source down to its target's row. So branches stand side
 * by side, a shortcut runs down a lane of its own, and no vertex or
 * vertical stretch of an edge shares a place with another. A long chain
 * is one tall column: the picture scrolls, it does not wrap.
 *
 * akk_graph_svg writes the layout as one standalone SVG. For tests and
 * stylesheets: each gate is a <g class="gate gate-N"> (N from 1) holding
 * its rounded rectangle and label, drawn first; each edge a <polyline
 * class="edge"> from its source's bottom to its target's top, with a
 * <polyline class="arrow"> head; each vertex a <g class="node gate-N">
 * (gate-0: the input and the loss, outside every gate) whose first
 * element is its <rect>. */
#ifndef AKK_GRAPH_SVG_H
#define AKK_GRAPH_SVG_H

#include <stdio.h>

#include "base/err.h"
#include "model/model.h"

struct akk_graph_box {
	double x, y, w, h;	/* user units, y down */
};

struct akk_graph_vertex {
	char kind[32];		/* "conv2d", "add", "input", "loss" */
	char name[64];		/* a graph node's name (a composite node's on
				 * its output vertex), else "" */
	char params[128];	/* the main options: "filters 24, kernel 3" */
	char shape[64];		/* the output shape, "" for the loss */
	int gate;		/* 1-based; 0 for the input and the loss */
	int row, lane;
	int first_in;		/* the edge of its first input, -1: none */
	struct akk_graph_box box;
};

struct akk_graph_edge {
	int from, to;		/* vertex indices, from < to */
	int lane;		/* the lane it runs down between the rows */
};

struct akk_graph_layout {
	struct akk_graph_vertex *v;	/* (nv) in topological order; owned */
	int nv, capv;
	struct akk_graph_edge *ed;	/* (ne) in the order of their targets;
					 * owned */
	int ne, cape;
	struct akk_graph_box *gates;	/* (ngates) gate g + 1's rectangle;
					 * owned */
	int ngates;
	int rows, lanes;
	double width, height;	/* the layout's extent; the SVG is as wide
				 * as its title needs when that is more */
};

/* Flatten and lay out m (planned by akk_model_plan). 0, or -1 with e
 * filled (out of memory); release gl either way. */
int akk_graph_layout(struct akk_graph_layout *gl, const struct akk_model *m,
		     struct akk_err *e);
void akk_graph_layout_release(struct akk_graph_layout *gl);

/* The polyline of edge i: up to 4 points into pts (x, y pairs), their
 * number returned. y never decreases along it. */
int akk_graph_edge_points(const struct akk_graph_layout *gl, int i,
			  double pts[4][2]);

/* Draw gl as one SVG document into f, with title on top; what names the
 * output in errors. */
int akk_graph_svg(FILE *f, const struct akk_graph_layout *gl,
		  const char *title, const char *what, struct akk_err *e);

#endif
