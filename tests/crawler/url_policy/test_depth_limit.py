"""The depth rule (crawler/url_policy/depth_limit.py): a URL at max_depth is fetched, one link
deeper is not, alike for one depth (the batch's admission) and for arrays (the plan, the frontier)."""

import numpy as np

from crawl_assets.crawler.url_policy.depth_limit import too_deep


def test_a_url_at_max_depth_is_fetched_and_one_link_deeper_is_not():
    assert [too_deep(depth, 2) for depth in (0, 1, 2, 3, 7)] == [False, False, False, True, True]
    assert not too_deep(0, 0) and too_deep(1, 0)  # max_depth 0: the seeds alone


def test_an_array_of_depths_is_judged_as_each_depth_alone():
    depths = np.array([0, 2, 3, 1, 4], np.int32)
    assert too_deep(depths, 2).tolist() == [too_deep(int(depth), 2) for depth in depths] == [
        False, False, True, False, True]
