// src/am/prepare.cpp - negotiated-payload AMs (stub).
#include "am/am.hpp"
