//! Alpha-beta-gamma cost model. (To be written.)
