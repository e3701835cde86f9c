import {expect} from 'chai'

import {clusterTiming, HEARTBEAT_INTERVAL_ENV, LOST_TIMEOUT_ENV} from '../../src/service/cluster-settings.js'

describe('cluster settings', () => {
  it('reads the failure detection timing in seconds from the environment, falling back to 3 s and 10 s', () => {
    expect(clusterTiming({})).to.deep.equal({heartbeatMs: 3000, lostMs: 10_000})
    expect(clusterTiming({[HEARTBEAT_INTERVAL_ENV]: '0.2', [LOST_TIMEOUT_ENV]: '1'})).to.deep.equal({heartbeatMs: 200, lostMs: 1000})
    expect(clusterTiming({[HEARTBEAT_INTERVAL_ENV]: 'soon', [LOST_TIMEOUT_ENV]: '-1'})).to.deep.equal({heartbeatMs: 3000, lostMs: 10_000})
  })
})
