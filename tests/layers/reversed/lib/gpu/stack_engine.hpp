// Stands in for the real header in the planted-violation tree.
#pragma once
