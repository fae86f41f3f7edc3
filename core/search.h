/*
 * search.h - the one binary search of samplefs: the partition point of a
 * sorted range (C++'s std::partition_point), as a macro so that the test
 * is inlined where it is used (the hot lookups, a sample's class or a
 * span's start, pay no call through a pointer).  Like bytes.h it sits at
 * the top of core/ and may be included anywhere.
 *
 * Every search over a sorted table is one of these:
 *   - the first element not below x (a lower bound; then test it for an
 *     exact match): SFS_PARTITION_POINT(T, 0, n, i, a[i] < x)
 *   - the last element at or before x (the block, span or class holding
 *     x, when a[0] <= x): SFS_PARTITION_POINT(T, 1, n, i, a[i] <= x) - 1,
 *     which is 0 for n <= 1
 *
 * A test that can fail (a node in an index block found damaged) keeps
 * the first error in a variable of the caller's, is false from then on
 * and the caller returns the error after the search (tarindex_lookup).
 */
#ifndef SFS_SEARCH_H
#define SFS_SEARCH_H

/*
 * The first i of type T in [lo, hi) for which `before`, an expression of
 * i, is false; hi if it is true throughout.  `before` must be true for a
 * prefix of the range and false for the rest; it is evaluated about
 * log2(hi - lo) times, never outside [lo, hi).  lo > hi gives lo.
 */
#define SFS_PARTITION_POINT(T, lo, hi, i, before) __extension__ ({	\
	T sfs_lo_ = (lo), sfs_hi_ = (hi);				\
	while (sfs_lo_ < sfs_hi_) {					\
		T i = sfs_lo_ + (sfs_hi_ - sfs_lo_) / 2;		\
		if (before)						\
			sfs_lo_ = i + 1;				\
		else							\
			sfs_hi_ = i;					\
	}								\
	sfs_lo_;							\
})

#endif
