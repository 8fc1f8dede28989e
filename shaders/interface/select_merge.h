// select_merge.comp: folds the per-tile lists of select_tile into tile 0.
#ifndef ATTENDRE_INTERFACE_SELECT_MERGE_H
#define ATTENDRE_INTERFACE_SELECT_MERGE_H
#include "interface/params.h"

ATT_NAMESPACE_BEGIN
ATT_PARAMS_BEGIN(SelectMergeParams)
  ATT_U32(tiles)
  ATT_U32(keep)
  ATT_U32(row_offset)
ATT_PARAMS_END(SelectMergeParams)
ATT_NAMESPACE_END

#endif
