/** A launch's progress folded from its worker's steps: the installing stage sits between the weights and loading. */
import {expect} from 'chai'

import type {LaunchProgress} from '../../src/protocol/launch.js'

import {advance, type LaunchTrack} from '../../src/cluster/launch-progress.js'

const pending = (): LaunchTrack => ({
  downloaded: false,
  progress: {downloaded_bytes: 0, error: null, files: [], hub: null, model_uid: 'm', progress: 0, repo: null, stage: 'pending', total_bytes: 0} as LaunchProgress,
})
const download = {downloadedBytes: 100, files: [], hub: 'huggingface', repo: 'org/repo', totalBytes: 100}

describe('launch progress', () => {
  it('goes from generating to installing to loading, never back', () => {
    const track = pending()
    advance(track, {stage: 'generating'})
    advance(track, {stage: 'installing'})
    expect(track.progress.stage).to.equal('installing')
    advance(track, {fraction: 0.5, stage: 'loading'})
    advance(track, {stage: 'installing'})
    expect(track.progress).to.include({progress: 0.5, stage: 'loading'})
  })

  it('keeps a finished download as most of the way while the environment is made', () => {
    const track = pending()
    advance(track, {download, stage: 'downloading'})
    advance(track, {stage: 'installing'})
    expect(track.progress).to.include({progress: 0.9, stage: 'installing'})
  })
})
