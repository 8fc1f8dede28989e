// select_merge.comp: one pass of the tree that folds select_tile's per-tile
// lists into tile 0.
#ifndef ATTENDRE_INTERFACE_SELECT_MERGE_H
#define ATTENDRE_INTERFACE_SELECT_MERGE_H
#include "interface/params.h"

ATT_NAMESPACE_BEGIN
ATT_PARAMS_BEGIN(SelectMergeParams)
  ATT_U32(tiles)       // lists per row
  ATT_U32(keep)        // entries per list
  ATT_U32(row_offset)
  ATT_U32(stride)      // distance between the lists one workgroup folds (fan_in^pass)
  ATT_U32(rows)        // select_merge_direct: rows of this dispatch
ATT_PARAMS_END(SelectMergeParams)
ATT_NAMESPACE_END

#endif
