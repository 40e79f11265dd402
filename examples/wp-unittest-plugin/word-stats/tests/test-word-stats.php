<?php
/**
 * Class Test_Word_Stats
 *
 * @package Word_Stats
 */

/**
 * Word counts, the reading-rate option, the [word_count] shortcode and the REST route.
 */
class Test_Word_Stats extends WP_UnitTestCase {

	public function test_counts_the_words_of_a_post() {
		$post_id = self::factory()->post->create( array( 'post_content' => 'one two three' ) );
		$this->assertSame( 3, word_stats_post_words( $post_id ) );
	}

	public function test_repeated_spaces_are_not_words() {
		$post_id = self::factory()->post->create( array( 'post_content' => 'a  b' ) );
		$this->assertSame( 2, word_stats_post_words( $post_id ) );
	}

	public function test_reading_time_follows_the_option() {
		update_option( WORD_STATS_OPTION, 2 );
		$post_id = self::factory()->post->create( array( 'post_content' => 'one two three four five' ) );
		$this->assertSame( 3, word_stats_reading_minutes( $post_id ) );
	}

	public function test_shortcode_counts_the_current_post() {
		$post_id = self::factory()->post->create( array( 'post_content' => 'alpha beta [word_count]' ) );
		$this->go_to( get_permalink( $post_id ) );
		$this->assertTrue( shortcode_exists( 'word_count' ) );
		$this->assertSame( '<span class="word-count">2 words</span>', do_shortcode( '[word_count id="' . $post_id . '"]' ) );
	}

	public function test_rest_route_reports_words_and_minutes() {
		$post_id  = self::factory()->post->create( array( 'post_content' => 'one two three four' ) );
		$request  = new WP_REST_Request( 'GET', '/word-stats/v1/posts/' . $post_id );
		$response = rest_get_server()->dispatch( $request );
		$this->assertSame( 200, $response->get_status() );
		$this->assertSame(
			array(
				'id'      => $post_id,
				'words'   => 4,
				'minutes' => 1,
			),
			$response->get_data()
		);
	}

	public function test_rest_route_hides_drafts() {
		$post_id  = self::factory()->post->create( array( 'post_status' => 'draft' ) );
		$response = rest_get_server()->dispatch( new WP_REST_Request( 'GET', '/word-stats/v1/posts/' . $post_id ) );
		$this->assertSame( 404, $response->get_status() );
	}
}
