// Poplar-compatible spelling of the codelet header.
#pragma once
#include "popc/Vertex.hpp"
