// select_tile.comp: the `keep` smallest (key, tie) pairs
// of each row, with payloads; used for top-K (keys from logits) and for the
// eviction victims (keys from policy scores).
#ifndef ATTENDRE_INTERFACE_SELECT_TILE_H
#define ATTENDRE_INTERFACE_SELECT_TILE_H
#include "interface/params.h"

ATT_NAMESPACE_BEGIN
// Words of shared memory per candidate of a select tile: key, tie and
// payload (bitonic.glsl declares one shared uint array of TILE for each).
ATT_CONST(kSelectWordsPerCandidate, 3u)
// select_direct.comp: best keys each invocation keeps in registers while
// it looks for the threshold, and collected entries it ranks at a time.
ATT_CONST(kDirectSelectBestKeys, 8u)
ATT_CONST(kDirectSelectRankBlock, 16u)
// Output lists: [row][tile][keep] entries of 3 words (key, tie, payload),
// sorted ascending; after the merge, tile 0 of each row holds the answer.
ATT_PARAMS_BEGIN(SelectTileParams)
  ATT_U32(count)          // candidates per row
  ATT_U32(tiles)          // ceil(count / TILE), or ceil(count / segment) for select_direct
  ATT_U32(segment)        // select_direct: candidates one invocation scans
  ATT_U32(keep)           // entries kept per tile list, a power of two <= TILE / 2
  ATT_U32(row_offset)     // first row of this dispatch (rows are dispatched in y)
  ATT_U32(rows)           // select_direct: rows of this dispatch
  // SOURCE_LOGITS: logits [row][source_stride] at source_offset (words)
  ATT_U32(source_offset)
  ATT_U32(source_stride)
  ATT_U32(kv_pos_offset)  // positions of the held slots, in the K/V buffer
  // SOURCE_EVICT: candidates are held slots 0..held-1, then chunk rows
  ATT_U32(held)
  ATT_U32(n_sink)
  ATT_U32(n_recent)       // W of the recent window; 0: none
  ATT_I32(recent_from)    // W > 0: positions >= recent_from are in the window (not candidates)
  ATT_U32(new_rows)       // chunk rows competing (0 under protect_new)
  ATT_U32(int_scores)     // policy scores are int32 (fifo, lru, lfu), else float
  ATT_U32(policy)
  ATT_U32(kv_score_offset)
  ATT_U32(chunk_pos_offset)    // in the chunk buffer
  ATT_U32(chunk_valid_offset)
  ATT_U32(chunk_init_offset)   // the initial score word written by score_stats
  ATT_U32(victims)        // insert_direct.comp: E, the entries evicted (keep = next_pow2(E))
ATT_PARAMS_END(SelectTileParams)
ATT_NAMESPACE_END

#endif
